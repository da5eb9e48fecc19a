-- GET one of the first N ConfigMaps (N from WRK_OBJECTS) per request.
local counter = 0
local n = tonumber(os.getenv("WRK_OBJECTS") or "2000")
local base = os.getenv("WRK_BASE")
request = function()
  counter = counter + 1
  return wrk.format("GET", base .. "/cm-" .. (counter % n))
end
response = function(status, headers, body)
  if status ~= 200 then io.stderr:write("unexpected status " .. status .. "\n") end
end
