-- wrk script for the txrelay end-to-end benchmark (bench/e2e.ts).
-- Every request carries a distinct pre-signed transaction: the bodies file
-- (u16 LE length + bytes per record) is read at init and each thread takes a
-- disjoint slice (record i goes to thread i % E2E_THREADS), pre-formatted so
-- request() costs nothing. When a thread runs out it never repeats a body
-- (txrelay would answer it from its dedup fast path): unless E2E_CYCLE=1 it
-- sends GET /__e2e_exhausted instead and done() reports it.
-- Env: E2E_BODIES, E2E_THREADS, E2E_PATH, E2E_HEADERS ("k: v" lines), E2E_CYCLE.

local threads = {}
local next_tid = 0

function setup(thread)
  thread:set("tid", next_tid)
  next_tid = next_tid + 1
  table.insert(threads, thread)
end

function init(args)
  local nthreads = tonumber(os.getenv("E2E_THREADS"))
  local path = os.getenv("E2E_PATH")
  cycle = os.getenv("E2E_CYCLE") == "1"
  local headers = {}
  for line in string.gmatch(os.getenv("E2E_HEADERS") or "", "[^\n]+") do
    local k, v = string.match(line, "^([^:]+):%s*(.*)$")
    if k then headers[k] = v end
  end
  local f = assert(io.open(os.getenv("E2E_BODIES"), "rb"))
  local data = f:read("*a")
  f:close()
  reqs = {}
  local pos, idx = 1, 0
  local size = #data
  while pos + 1 <= size do
    local lo, hi = string.byte(data, pos, pos + 1)
    local len = lo + hi * 256
    if idx % nthreads == tid then
      reqs[#reqs + 1] = wrk.format("POST", path, headers, string.sub(data, pos + 2, pos + 1 + len))
    end
    pos = pos + 2 + len
    idx = idx + 1
  end
  data = nil
  n = 0
  exhausted = 0
  stop_req = wrk.format("GET", "/__e2e_exhausted")
end

function request()
  n = n + 1
  if n > #reqs then
    if cycle and #reqs > 0 then
      n = 1
    else
      exhausted = 1
      return stop_req
    end
  end
  return reqs[n]
end

function done(summary, latency, requests)
  local ex = 0
  for _, t in ipairs(threads) do ex = ex + (t:get("exhausted") or 0) end
  local e = summary.errors
  io.write(string.format(
    'E2E_JSON {"requests":%d,"duration_us":%d,"connect_err":%d,"read_err":%d,"write_err":%d,"status_err":%d,"timeout_err":%d,' ..
    '"lat_p50_us":%d,"lat_p90_us":%d,"lat_p99_us":%d,"lat_max_us":%d,"exhausted_threads":%d}\n',
    summary.requests, summary.duration, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max, ex))
end
