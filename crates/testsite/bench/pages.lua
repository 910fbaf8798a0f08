-- wrk script: requests distinct generated pages round-robin over all hosts, the way a
-- crawler would, with keep-alive. Page paths follow Site::page_path.
-- Environment: PAGES (default 1000000), HOSTS (default 100), PORT (default 18080).
local pages = tonumber(os.getenv("PAGES") or "1000000")
local hosts = tonumber(os.getenv("HOSTS") or "100")
local port = os.getenv("PORT") or "18080"
local counter = 0

local function page_path(p)
  if p < hosts then return "/" end
  if p % 50 == 7 then return string.format("/private/p%d.html", p) end
  if p % 50 == 17 then return string.format("/private/public/p%d.html", p) end
  if p % 11 == 3 then return string.format("/~u%d/p%d.html", p % 5, p) end
  return string.format("/s%d/d%d/p%d.html", p % 7, p % 13, p)
end

request = function()
  counter = counter + 1
  local p = (counter * 7919) % pages
  local host = string.format("h%d.test:%s", p % hosts, port)
  return wrk.format("GET", page_path(p), { ["Host"] = host, ["Accept-Encoding"] = os.getenv("ACCEPT") or "identity" })
end
