-- The SDK write mix of bench/sdk-mix.ts for wrk, read from a file bench/mix-load.ts writes from
-- SdkMix itself (so the two cannot drift): one write a line, `METHOD<TAB>PATH<TAB>BODY`, cycled.
-- The Authorization and Content-Type headers come with `-H` on wrk's command line.
--
-- Script arguments (after `--`):
--   args[1]  the requests file
--   args[2]  the first line to send (0-based; a second run continues where the first stopped)
--   args[3]  wrk's thread count: thread k sends lines k, k + threads, k + 2 × threads, ...
--
-- Every request is built once in init(), so request() only indexes a table. Each thread's init()
-- prints `wrk-mix: ready` when it is done, and done() prints `wrk-mix: done {json}`.

local next_id = 0

function setup(thread)
  thread:set("thread_id", next_id)
  next_id = next_id + 1
end

local requests = {}
local count = 0
local at = 0

function init(args)
  local file, first, threads = args[1], tonumber(args[2]), tonumber(args[3])
  -- What wrk.format would put between the path and the body, built once: it costs a table and
  -- a string.format a header per call, too much for 300 000 requests.
  local head = { " HTTP/1.1" }
  for name, value in pairs(wrk.headers) do head[#head + 1] = name .. ": " .. value end
  head[#head + 1] = "Content-Length: "
  head = table.concat(head, "\r\n")
  local line_no = 0
  for line in io.lines(file) do
    if line_no % threads == thread_id then
      local method, path, body = line:match("^(%u+)\t([^\t]+)\t(.*)$")
      count = count + 1
      requests[count] = method .. " " .. path .. head .. #body .. "\r\n\r\n" .. body
    end
    line_no = line_no + 1
  end
  at = math.floor(first / threads) % count
  io.write("wrk-mix: ready\n")
  io.flush()
end

function request()
  at = at + 1
  if at > count then at = 1 end
  return requests[at]
end

function done(summary, latency)
  local e = summary.errors
  io.write(string.format(
    'wrk-mix: done {"duration_us":%d,"requests":%d,"non_2xx":%d,"errors":%d,"timeouts":%d,"p50_us":%d,"p99_us":%d,"max_us":%d}\n',
    summary.duration, summary.requests, e.status, e.connect + e.read + e.write, e.timeout,
    latency:percentile(50), latency:percentile(99), latency.max))
  io.flush()
end
