-- The training examples' --profile [PATH] (examples/profile_steps.lua): on a
-- tiny setting each prints the op table and writes a Chrome trace, then stops.
local runner = arg and arg[-1] or "build/wick"

local function read(path) local f = assert(io.open(path, "rb")); local s = f:read("*a"); f:close(); return s end

-- A strict JSON reader (what Perfetto and chrome://tracing need to load the
-- trace): the value, or nil and where it failed.
local function json_decode(text)
  local pos = 1
  local value
  local function ws() pos = text:find("[^ \t\r\n]", pos) or #text + 1 end
  local function fail(what) error(("JSON: %s at byte %d"):format(what, pos), 0) end
  local function str()
    local out = {}
    pos = pos + 1
    while true do
      local c = text:sub(pos, pos)
      if c == "" or c:byte() < 32 then fail("bad string") end
      if c == '"' then pos = pos + 1; return table.concat(out) end
      if c == "\\" then
        local e = text:sub(pos + 1, pos + 1)
        if e == "u" then
          if not text:sub(pos + 2, pos + 5):match("^%x%x%x%x$") then fail("bad \\u escape") end
          out[#out + 1] = "?"
          pos = pos + 6
        elseif e:match('^["\\/bfnrt]$') then
          out[#out + 1] = e
          pos = pos + 2
        else
          fail("bad escape")
        end
      else
        out[#out + 1] = c
        pos = pos + 1
      end
    end
  end
  value = function()
    ws()
    local c = text:sub(pos, pos)
    if c == "{" then
      local obj = {}
      pos = pos + 1
      ws()
      if text:sub(pos, pos) == "}" then pos = pos + 1; return obj end
      while true do
        ws()
        if text:sub(pos, pos) ~= '"' then fail("expected a key") end
        local k = str()
        ws()
        if text:sub(pos, pos) ~= ":" then fail("expected ':'") end
        pos = pos + 1
        obj[k] = value()
        ws()
        local d = text:sub(pos, pos)
        pos = pos + 1
        if d == "}" then return obj end
        if d ~= "," then fail("expected ',' or '}'") end
      end
    elseif c == "[" then
      local arr = {}
      pos = pos + 1
      ws()
      if text:sub(pos, pos) == "]" then pos = pos + 1; return arr end
      while true do
        arr[#arr + 1] = value()
        ws()
        local d = text:sub(pos, pos)
        pos = pos + 1
        if d == "]" then return arr end
        if d ~= "," then fail("expected ',' or ']'") end
      end
    elseif c == '"' then
      return str()
    end
    local num = text:match("^-?%d+%.?%d*[eE]?[-+]?%d*", pos)
    if num and num ~= "" and tonumber(num) then pos = pos + #num; return tonumber(num) end
    for word, v in pairs({ ["true"] = true, ["false"] = false, null = false }) do
      if text:sub(pos, pos + #word - 1) == word then pos = pos + #word; return v end
    end
    fail("unexpected '" .. c .. "'")
  end
  local ok, v = pcall(value)
  if not ok then return nil, v end
  ws()
  if pos <= #text then return nil, "JSON: trailing text at byte " .. pos end
  return v
end

-- Runs an example with --profile (its path in a fresh directory); checks the
-- table and the trace, and returns the output and the trace.
local function profile_run(script, args)
  local dir = os.tmpname()
  os.remove(dir)
  os.execute("mkdir -p " .. dir)
  local trace = dir .. "/trace.json"
  local cmd = ("%s examples/%s %s --threads 1 --profile %s > %s/out.txt 2>&1"):format(runner, script, args, trace, dir)
  local ok = os.execute(cmd)
  local out = read(dir .. "/out.txt")
  assert(ok == true or ok == 0, out)
  -- the table: PyTorch's columns, sorted by self CPU time, at most 15 rows
  local head = out:match("\n?(Name +Self CPU %% +Self CPU +CPU total %% +CPU total +CPU time avg[^\n]*)\n")
  assert.is_truthy(head, out)
  local body = out:match("Name[^\n]*\n%-[^\n]*\n(.-)\n%-%-%-")
  local rows, last = 0, math.huge
  for line in body:gmatch("[^\n]+") do
    rows = rows + 1
    local value, unit = line:match("^.-%s+[%d.]+%%%s+([%d.]+)([mu]?s)")
    local us = tonumber(value) * (unit == "ms" and 1000 or unit == "s" and 1e6 or 1)
    assert.is_true(us <= last * 1.0001 + 1e-3, line) -- sorted by self CPU time
    last = us
  end
  assert.is_true(rows >= 3 and rows <= 15, body)
  assert.is_truthy(out:find("\nProfilerStep%* "), out) -- the three profiled steps, one row
  assert.is_truthy(out:find("Self CPU time total: ", 1, true), out)
  assert.is_truthy(out:find("Chrome trace written to " .. trace, 1, true), out)
  -- the trace: valid JSON, X events with times, the steps by their own names
  local doc, err = json_decode(read(trace))
  assert.is_not_nil(doc, err)
  local names, x = {}, 0
  for _, e in ipairs(doc.traceEvents) do
    -- the CPU's events (thread 1); on a GPU each also has its span on the GPU's track
    if e.ph == "X" and e.tid == 1 then
      x = x + 1
      assert.is_true(type(e.ts) == "number" and type(e.dur) == "number" and e.dur >= 0)
      names[e.name] = (names[e.name] or 0) + 1
    end
  end
  assert.is_true(x > 10, "X events: " .. x)
  assert.are.equal(1, names["ProfilerStep#2"])
  assert.are.equal(1, names["ProfilerStep#4"])
  assert.is_nil(names["ProfilerStep#1"]) -- the warm-up step is not recorded
  os.execute("rm -rf " .. dir)
  return out, names
end

describe("the examples' --profile", function()
  it("reads strict JSON (the trace checker can fail)", function()
    assert.are.equal(2, json_decode('{"a": [1, 2.5e3, "x\\"y"], "b": true}').a[2] and 2)
    assert.is_nil(json_decode('{"a": [1, 2,]}'))
    assert.is_nil(json_decode('{"a": "tab\there"}'))
    assert.is_nil(json_decode('{"a": 1} x'))
  end)

  local have_data = io.open((os.getenv("FASHION_MNIST_DIR") or "/usr/share/datasets/fashion-mnist")
    .. "/t10k-labels-idx1-ubyte.gz")
  if have_data then have_data:close() end
  local fm = have_data and it or pending
  fm("fashion_mnist.lua --profile (needs Debian's Fashion-MNIST)", function()
    local _, names = profile_run("fashion_mnist.lua", "--batch-size 16")
    assert.are.equal(9, names.linear) -- 3 layers, 3 steps
    assert.are.equal(3, names["enumerate(DataLoader)"])
  end)

  it("gpt.lua --profile (a tiny model)", function()
    local out, names = profile_run("gpt.lua", "--block-size 8 --batch-size 2 --n-layer 1 --n-head 2 --n-embd 8")
    assert.are.equal(3, names.get_batch)
    assert.are.equal(3, names.backward)
    assert.is_nil(out:find("sample", 1, true)) -- it stops after the profile
  end)

  it("dcgan.lua --profile on fake data", function()
    local _, names = profile_run("dcgan.lua", "--dataset fake --batchSize 2 --nz 4 --ngf 2 --ndf 2"
      .. " --manualSeed 1 --outf " .. (os.getenv("TMPDIR") or "/tmp"))
    assert.are.equal(9, names.backward) -- D real, D fake, G: three a step
  end)

  it("word_language_model.lua --profile (a tiny LSTM)", function()
    local _, names = profile_run("word_language_model.lua", "--emsize 4 --nhid 4 --bptt 4 --batch_size 2")
    assert.are.equal(3, names.get_batch)
  end)

  it("takes --profile without a path (profile.json), and a path after it", function()
    -- argparse's nargs = "?" (the ports) and the hand-written parsers
    local argparse = dofile("examples/argparse.lua")
    local p = argparse.ArgumentParser("x.lua")
    p:add_argument("--profile", { nargs = "?", const = "profile.json" })
    p:add_argument("--n", { type = "int", default = 1 })
    assert.are.equal("profile.json", p:parse_args({ "--profile" }).profile)
    assert.are.equal("profile.json", p:parse_args({ "--profile", "--n", "2" }).profile)
    assert.are.equal("t.json", p:parse_args({ "--profile", "t.json", "--n", "2" }).profile)
    assert.are.equal("t.json", p:parse_args({ "--profile=t.json" }).profile)
    assert.is_nil(p:parse_args({}).profile)
    assert.is_truthy(p:usage():find("--profile [STRING]", 1, true))
  end)
end)
