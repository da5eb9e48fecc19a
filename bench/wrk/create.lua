-- POST a new ConfigMap per request (names unique per wrk thread and run).
local counter = 0
local prefix = os.getenv("WRK_PREFIX") or "w"
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local data = string.rep("x", 900)
request = function()
  counter = counter + 1
  local body = '{"metadata":{"name":"' .. prefix .. "-" .. counter ..
    '","labels":{"group":"' .. (counter % 10) .. '"}},"data":{"key":"' .. data .. '"}}'
  return wrk.format(nil, nil, nil, body)
end
response = function(status, headers, body)
  if status ~= 201 then io.stderr:write("unexpected status " .. status .. "\n") end
end
