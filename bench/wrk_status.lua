-- bench/load.sh's wrk script: counts the answers that were not 200. wrk's own count ("Non-2xx
-- or 3xx responses") lets a redirect pass, and a 302 to the sign-in or two-factor page is
-- cheaper than any page: it would be measured as a fast success.
local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  not200 = 0
  first = 0
end

function response(status, headers, body)
  if status ~= 200 then
    not200 = not200 + 1
    if first == 0 then
      first = status
    end
  end
end

function done(summary, latency, requests)
  local count, status = 0, 0
  for _, thread in ipairs(threads) do
    count = count + thread:get("not200")
    if status == 0 then
      status = thread:get("first")
    end
  end
  io.write(string.format("Not 200: %d (first status %d)\n", count, status))
end
