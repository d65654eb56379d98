-- pipeline.lua: wrk script that pipelines requests (the standard wrk
-- pipeline.lua approach). init() builds one string holding DEPTH copies of
-- the request (DEPTH = first script argument, default 16); request() returns
-- it, so every write sends DEPTH requests and wrk waits for DEPTH responses
-- before the next write. Usage: wrk -s pipeline.lua URL -- 16
init = function(args)
   local depth = tonumber(args[1]) or 16
   local r = {}
   for i = 1, depth do
      r[i] = wrk.format()
   end
   req = table.concat(r)
end

request = function()
   return req
end
