-- docs/api.md against the loaded module: every name the page documents exists
-- (wick.x, nn.X, F.x, optim.X and t:method, m:method, opt:method, ...), every
-- public function and table of the module is named on the page, and the names
-- of its "Not implemented" section are really absent. Adding a public function
-- without documenting it, or renaming one the page names, fails here.
local wick = require("wick")
local nn, optim = wick.nn, wick.optim

local DOC = "docs/api.md"

local function read(path)
  local f = assert(io.open(path, "rb"), "cannot open " .. path .. " (specs run from the source tree)")
  local s = f:read("*a")
  f:close()
  return s
end

-- The page split at its "## Not implemented" heading: what must exist, what must not.
local function split_doc(text)
  local at = text:find("\n## Not implemented", 1, true)
  if not at then return text, "" end
  local rest = text:sub(at + 1)
  local next_heading = rest:find("\n## ", 2, true)
  local absent = next_heading and rest:sub(1, next_heading) or rest
  local present = text:sub(1, at) .. (next_heading and rest:sub(next_heading) or "")
  return present, absent
end

-- Roots of dotted names on the page (a root preceded by a letter, digit, '_',
-- '.', '/' or '-' is part of something else: "t.data", "include/wick.h").
local ROOTS = {
  wick = function() return wick end,
  nn = function() return nn end,
  F = function() return nn.functional end,
  optim = function() return optim end,
  dist = function() return wick.distributed end, -- the page's `local dist = wick.distributed`
}

local function preceded_by_name(text, i)
  return i > 1 and text:sub(i - 1, i - 1):find("[%w_%./%-]") ~= nil
end

-- Every dotted name "root.a.b" on the page: { {name =, path = {"a", "b"}, root =} }
local function dotted_names(text)
  local out, seen = {}, {}
  for root in pairs(ROOTS) do
    local init = 1
    while true do
      local i, j, rest = text:find(root .. "%.([%a_][%w_%.]*)", init)
      if not i then break end
      init = j + 1
      if not preceded_by_name(text, i) then
        rest = rest:gsub("%.+$", "")
        local name = root .. "." .. rest
        if not seen[name] then
          seen[name] = true
          local path = {}
          for part in rest:gmatch("[^%.]+") do path[#path + 1] = part end
          out[#out + 1] = { name = name, root = root, path = path }
        end
      end
    end
  end
  table.sort(out, function(a, b) return a.name < b.name end)
  return out
end

-- The value a dotted name stands for, or nil.
local function resolve(entry)
  local v = ROOTS[entry.root]()
  for _, part in ipairs(entry.path) do
    if type(v) ~= "table" then return nil end
    local ok, r = pcall(function() return v[part] end)
    if not ok then return nil end
    v = r
  end
  return v
end

-- Receivers of "x:method" on the page and an object that must have the method.
local function receivers()
  local p = wick.ones(1):requires_grad_()
  local opt = optim.SGD({ p }, { lr = 0.1 })
  local loader = wick.data.DataLoader(wick.data.TensorDataset(wick.ones(2)))
  local t = wick.ones(1)
  local m = nn.Linear(1, 1)
  return {
    t = t, u = t, loss = t, x = t, p = t, y = t,
    m = m, model = m, Net = nn.Module,
    opt = opt, sched = optim.lr_scheduler.StepLR(opt, 1), loader = loader,
  }
end

local function method_names(text)
  local out, seen = {}, {}
  for i, recv, name in text:gmatch("()([%a_][%w_]*):([%a_][%w_]*)") do
    if not preceded_by_name(text, i) and not seen[recv .. ":" .. name] then
      seen[recv .. ":" .. name] = true
      out[#out + 1] = { recv = recv, name = name }
    end
  end
  return out
end

-- Problems of a page against the module: documented names that do not exist,
-- and names of the absent section that do.
local function check_page(text)
  local present, absent = split_doc(text)
  local missing, not_absent, checked = {}, {}, 0
  for _, e in ipairs(dotted_names(present)) do
    checked = checked + 1
    if resolve(e) == nil then missing[#missing + 1] = e.name end
  end
  local objects = receivers()
  for _, e in ipairs(method_names(present)) do
    local obj = objects[e.recv]
    if obj ~= nil then
      checked = checked + 1
      local ok, v = pcall(function() return obj[e.name] end)
      if not ok or v == nil then missing[#missing + 1] = e.recv .. ":" .. e.name end
    end
  end
  for _, e in ipairs(dotted_names(absent)) do
    if resolve(e) ~= nil then not_absent[#not_absent + 1] = e.name end
  end
  return missing, not_absent, checked
end

-- The public names of a table: string keys not starting with "_" whose values
-- are functions or tables (and strings for wick's dtype names).
local function public(tbl, with_strings)
  local out = {}
  for k, v in pairs(tbl) do
    if type(k) == "string" and k:sub(1, 1) ~= "_" and
        (type(v) == "function" or type(v) == "table" or (with_strings and type(v) == "string")) then
      out[#out + 1] = k
    end
  end
  table.sort(out)
  return out
end

local function mentions(text, s)
  local init = 1
  while true do
    local i, j = text:find(s, init, true)
    if not i then return false end
    local after = text:sub(j + 1, j + 1)
    if not after:find("[%w_]") then return true end
    init = j + 1
  end
end

-- Every public name of the module that the page never mentions.
local function undocumented(text)
  local present = split_doc(text)
  local out = {}
  local function need(names, forms)
    for _, k in ipairs(names) do
      local found = false
      for _, form in ipairs(forms) do
        if mentions(present, form:format(k)) then found = true; break end
      end
      if not found then out[#out + 1] = forms[1]:format(k) end
    end
  end
  need(public(wick, true), { "wick.%s" })
  need(public(wick.Tensor), { ":%s", ".%s" })
  need(public(wick._tensor_fields), { "t.%s" })
  need(public(nn), { "nn.%s" })
  need(public(nn.functional), { "F.%s" })
  need(public(nn.init), { "nn.init.%s" })
  need(public(nn.utils), { "nn.utils.%s" })
  need(public(optim), { "optim.%s", "lr_scheduler.%s" })
  need(public(optim.lr_scheduler), { "lr_scheduler.%s" })
  need(public(wick.data), { "wick.data.%s" })
  need(public(wick.cuda), { "wick.cuda.%s" })
  need(public(wick.ops), { "wick.%s" })
  need(public(wick.distributed), { "dist.%s", "wick.distributed.%s" })
  need(public(nn.parallel), { "nn.parallel.%s" })
  -- methods of modules, containers, optimizers, schedulers and loaders
  local skip = { init = true }
  local function methods(tbl)
    local names = {}
    for _, k in ipairs(public(tbl)) do
      if type(tbl[k]) == "function" and not skip[k] then names[#names + 1] = k end
    end
    return names
  end
  need(methods(nn.Module), { ":%s", ".%s" })
  need(methods(nn.ModuleList), { ":%s" })
  need(methods(nn.ModuleDict), { ":%s" })
  need(methods(optim.Optimizer), { ":%s", ".%s" })
  local opt = optim.SGD({ wick.ones(1):requires_grad_() }, { lr = 0.1 })
  need(methods(getmetatable(optim.lr_scheduler.StepLR(opt, 1)).__index), { ":%s", ".%s" })
  need(methods(getmetatable(wick.data.DataLoader(wick.data.TensorDataset(wick.ones(2))))), { ":%s" })
  return out
end

-- Repository paths in prose ("src/core/tensor.c", "docs/checkpoint-format.md"):
-- a word starting at one of the tree's top folders. Globs and patterns
-- ("lua/wick/*.lua", "lua/?.lua") and paths under another folder
-- ("build/lua54/wick.so", "P/share/lua/5.1") are not checked.
local TOP = { src = true, lua = true, docs = true, include = true, spec = true, tests = true, tools = true,
  bench = true, examples = true, fuzz = true }
local PATH_CHECKED = { "README.md", "docs/api.md", "docs/architecture.md", "docs/checkpoint-format.md",
  "docs/cuda-waits.md", "include/wick.h", "include/wick_embed.h", "examples/embed/README.md" }

local function exists(path)
  local f = io.open(path, "rb")
  if f then f:close() end
  return f ~= nil
end

local function stale_paths(text)
  local out, seen = {}, {}
  for i, word in text:gmatch("()([%w_%.%-/%*%?{},]+)") do
    local top = word:match("^([%w_]+)/")
    if top and TOP[top] and not preceded_by_name(text, i) then
      local path = word:match("^[^,]*"):gsub("[%.]+$", "")
      if not path:find("[%*%?{}]") and not seen[path] then
        seen[path] = true
        if not exists(path) then out[#out + 1] = path end
      end
    end
  end
  return out
end

describe("docs/api.md", function()
  local text = read(DOC)

  it("names only what exists, and what its 'Not implemented' section names does not", function()
    local missing, not_absent, checked = check_page(text)
    assert.are.same({}, missing, "documented but not in the module: " .. table.concat(missing, ", "))
    assert.are.same({}, not_absent, "listed as not implemented but present: " .. table.concat(not_absent, ", "))
    -- the extraction found the page's names (not a vacuous pass)
    assert.is_true(checked > 300, "only " .. checked .. " names found on the page")
  end)

  it("documents every public function and table of the module", function()
    local out = undocumented(text)
    assert.are.same({}, out, "not documented in " .. DOC .. ": " .. table.concat(out, ", "))
  end)

  it("keeps the sections the public contract fixes", function()
    for _, heading in ipairs({ "## Conventions", "## Devices", "## Tensors", "## The same-device rule",
      "## Modules", "## Training", "## Checkpoints", "## CUDA", "## Errors", "## Not implemented" }) do
      assert.is_truthy(text:find("\n" .. heading, 1, true), "missing section " .. heading)
    end
  end)

  it("runs its Lua examples", function()
    local blocks = 0
    for code in text:gmatch("\n```lua\n(.-)\n```") do
      blocks = blocks + 1
      local printed = {}
      local env = setmetatable({ print = function(...) printed[#printed + 1] = table.concat({ ... }, " ") end },
        { __index = _G })
      local name, chunk = "=docs/api.md example " .. blocks, nil
      if setfenv then
        chunk = assert(loadstring(code, name))
        setfenv(chunk, env)
      else
        chunk = assert(load(code, name, "t", env))
      end
      local ok, err = pcall(chunk)
      assert(ok, err)
      if blocks == 1 then
        -- the first script trains a classifier on a separable problem
        local accuracy = tonumber((printed[1] or ""):match("^accuracy (%S+)$"))
        assert.is_number(accuracy, "the first script printed " .. tostring(printed[1]))
        assert.is_true(accuracy >= 0.8, "the first script reached only " .. accuracy)
      end
    end
    assert.is_true(blocks >= 1, "no ```lua example on the page")
  end)

  it("and the README, docs/*.md, the headers and the embed example name only files that exist", function()
    local stale = {}
    for _, file in ipairs(PATH_CHECKED) do
      for _, p in ipairs(stale_paths(read(file))) do stale[#stale + 1] = file .. ": " .. p end
    end
    assert.are.same({}, stale, "paths that do not exist: " .. table.concat(stale, ", "))
  end)

  it("links only to its own headings", function()
    local slugs = {}
    for heading in ("\n" .. text):gmatch("\n#+ ([^\n]+)") do
      -- GitHub's anchors: lower case, punctuation dropped, spaces as hyphens
      slugs[(heading:lower():gsub("[^%w%s_%-]", ""):gsub("%s", "-"))] = true
    end
    local broken, links = {}, 0
    for anchor in text:gmatch("%]%(#([^%)]+)%)") do
      links = links + 1
      if not slugs[anchor] then broken[#broken + 1] = anchor end
    end
    assert.are.same({}, broken, "links to no heading: " .. table.concat(broken, ", "))
    assert.is_true(links >= 10, "only " .. links .. " links found")
  end)

  describe("the checker itself", function()
    it("catches a documented name that does not exist, in each form", function()
      local page = "`wick.zeros` `wick.no_such_fn` `nn.NoSuchLayer` `F.no_such` `optim.NoSuch` `t:no_such_method`"
        .. " `m:no_such` `wick.nn.init.no_such_` `t:add`\n"
      local missing = check_page(page)
      table.sort(missing)
      assert.are.same({ "F.no_such", "m:no_such", "nn.NoSuchLayer", "optim.NoSuch", "t:no_such_method",
        "wick.nn.init.no_such_", "wick.no_such_fn" }, missing)
    end)

    it("catches a name listed as not implemented that exists", function()
      local _, not_absent = check_page("x\n## Not implemented\n`wick.no_such_name` `wick.zeros`\n")
      assert.are.same({ "wick.zeros" }, not_absent)
    end)

    it("ignores file names and fields of other things", function()
      local missing = check_page("`include/wick.h`, `build/lua54/wick.so`, `p.data`, `lua/wick/nn/init.lua`\n")
      assert.are.same({}, missing)
    end)

    it("catches a path that does not exist, and skips globs and other folders", function()
      assert.are.same({ "src/core/no_such_file.c" }, stale_paths(
        "see `src/core/no_such_file.c`, `src/core/tensor.c`, `lua/wick/*.lua`, `lua/?.lua;`, `build/lua54/wick.so`,"
        .. " P/share/lua/5.1 and docs/api.md.\n"))
    end)

    it("catches a public function the page does not mention", function()
      local out = undocumented("`wick.zeros`\n")
      local found = {}
      for _, name in ipairs(out) do found[name] = true end
      assert.is_true(found["wick.ones"] and found[":mm"] and found["nn.Linear"] and found["F.linear"] and true or false)
    end)
  end)
end)
