-- Merge-patch one of the first N ConfigMaps per request, always to a new value.
local counter = 0
local n = tonumber(os.getenv("WRK_OBJECTS") or "2000")
local base = os.getenv("WRK_BASE")
wrk.method = "PATCH"
wrk.headers["Content-Type"] = "application/merge-patch+json"
local data = string.rep("x", 900)
request = function()
  counter = counter + 1
  return wrk.format(nil, base .. "/cm-" .. (counter % n), nil,
    '{"data":{"key":"v' .. counter .. data .. '"}}')
end
response = function(status, headers, body)
  if status ~= 200 then io.stderr:write("unexpected status " .. status .. "\n") end
end
