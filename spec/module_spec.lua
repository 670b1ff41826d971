-- The module system as a PyTorch script uses it: Module:apply, named_modules,
-- modules, named_children, ModuleList (walked by ipairs), ModuleDict,
-- ParameterList/ParameterDict, the container rule (tables of modules assigned
-- in init are found, in a fixed order, and nothing holding a module is skipped
-- silently), tied weights in state_dict, PyTorch's checkpoint names, and
-- wick.nn.init.
local wick = require("wick")
local nn = wick.nn
local support = require("spec.support")
local assert_error_has = support.assert_error_has
-- two tensors close elementwise
local function assert_close(a, b, tol)
  assert.are.same(support.shape_of(b), support.shape_of(a))
  support.assert_close(support.values_of(a), support.values_of(b), tol)
end

local F64 = { dtype = "float64" }

local function keys_of(iter_fn)
  local out = {}
  for k in iter_fn do out[#out + 1] = k end
  return out
end

local function names_of_params(m) return keys_of(m:named_parameters()) end

local function sorted_keys(t)
  local out = {}
  for k in pairs(t) do out[#out + 1] = k end
  table.sort(out)
  return out
end

-- a nanoGPT-shaped block and model: ModuleDict transformer, ModuleList h, tied head
local Block = nn.Module:extend("Block")
function Block:init(n)
  self.ln_1 = nn.LayerNorm(n)
  self.attn = nn.Linear(n, n)
  self.ln_2 = nn.LayerNorm(n)
end
function Block:forward(x) return x + self.attn(self.ln_1(x)) end

local Tiny = nn.Module:extend("Tiny")
function Tiny:init(vocab, n, layers)
  local h = {}
  for i = 1, layers do h[i] = Block(n) end
  self.transformer = nn.ModuleDict({
    { "wte", nn.Embedding(vocab, n) },
    { "h", nn.ModuleList(h) },
    { "ln_f", nn.LayerNorm(n) },
  })
  self.lm_head = nn.Linear(n, vocab, false)
  self.transformer.wte.weight = self.lm_head.weight -- weight tying, as nanoGPT does
  self.blocks_run = 0
end
function Tiny:forward(idx)
  local x = self.transformer.wte(idx)
  for _, block in ipairs(self.transformer.h) do
    x = block(x)
    self.blocks_run = self.blocks_run + 1
  end
  return self.lm_head(self.transformer.ln_f(x))
end

describe("Module:apply and the module walks", function()
  it("apply calls fn on every module, children first, and returns the module", function()
    local model = nn.Sequential(nn.Linear(2, 3), nn.Sequential(nn.ReLU(), nn.Linear(3, 1)))
    local order = {}
    local r = model:apply(function(m) order[#order + 1] = getmetatable(m).__name end)
    assert.is_true(rawequal(model, r))
    assert.are.same({ "Linear", "ReLU", "Linear", "Sequential", "Sequential" }, order)
  end)

  it("apply initialises weights the way nanoGPT's _init_weights does", function()
    wick.manual_seed(1)
    local model = Tiny(50, 16, 2)
    model:apply(function(m)
      if getmetatable(m) == nn.Linear then
        nn.init.normal_(m.weight, 0.0, 0.02)
        if m.bias then nn.init.zeros_(m.bias) end
      elseif getmetatable(m) == nn.Embedding then
        nn.init.normal_(m.weight, { mean = 0.0, std = 0.02 })
      end
    end)
    local b = model.transformer.h[1].attn.bias
    assert.are.equal(0, b:abs():max():item())
    local w = model.lm_head.weight
    assert.is_true(math.abs(w:std():item() - 0.02) < 0.003)
    assert.is_true(w.requires_grad) -- still a parameter, filled in place
    assert.is_nil(w.grad_fn)
  end)

  it("named_modules gives '' for self, dotted 1-based names, each module once", function()
    local shared = nn.Linear(2, 2)
    local model = nn.Sequential(shared, nn.ReLU(), shared)
    local names, classes = {}, {}
    for name, m in model:named_modules() do
      names[#names + 1] = name
      classes[#classes + 1] = getmetatable(m).__name
    end
    assert.are.same({ "", "1", "2" }, names)
    assert.are.same({ "Sequential", "Linear", "ReLU" }, classes)
    assert.are.equal(3, #model:modules())
    assert.is_true(rawequal(model, model:modules()[1]))
    -- named_children: each child once, too
    assert.are.same({ "1", "2" }, keys_of(model:named_children()))
    assert.are.equal(2, #model:children())
    local tiny = Tiny(5, 4, 2)
    local all = keys_of(tiny:named_modules())
    assert.are.same({ "", "transformer", "transformer.wte", "transformer.h", "transformer.h.1", "transformer.h.1.ln_1",
      "transformer.h.1.attn", "transformer.h.1.ln_2", "transformer.h.2", "transformer.h.2.ln_1", "transformer.h.2.attn",
      "transformer.h.2.ln_2", "transformer.ln_f", "lm_head" }, all)
    assert.is_true(rawequal(tiny.transformer.h[2].attn, tiny:get_submodule("transformer.h.2.attn")))
    assert_error_has(function() tiny:get_submodule("transformer.h.3") end, "no submodule 'transformer.h.3'")
  end)

  it("getmetatable(m).__name is the class name", function()
    assert.are.equal("Conv2d", getmetatable(nn.Conv2d(1, 2, 3)).__name)
    assert.are.equal("Tiny", getmetatable(Tiny(3, 2, 1)).__name)
    assert.are.equal("ModuleDict", getmetatable(nn.ModuleDict()).__name)
  end)

  it("a subclass of a layer takes the layer's arguments by name and may override _conv_forward", function()
    local LN = nn.LayerNorm:extend("LayerNorm") -- whisper's class LayerNorm(nn.LayerNorm)
    local ln = LN({ normalized_shape = 4 })
    assert.are.same({ 4 }, ln.weight:size())
    local x = wick.randn(2, 4)
    assert_close(ln(x), nn.LayerNorm(4)(x), 1e-6)
    local Conv1d = nn.Conv1d:extend("Conv1d")
    local c = Conv1d(3, 5, { kernel_size = 3, padding = 1 })
    assert.are.same({ 5, 3, 3 }, c.weight:size())
    assert.are.same({ 2, 5, 7 }, c(wick.randn(2, 3, 7)):size())
    -- weight standardisation (BiT's StdConv2d) through PyTorch's hook
    local Std = nn.Conv2d:extend("StdConv2d")
    function Std:_conv_forward(input, weight, bias)
      local w = (weight - weight:mean({ 2, 3, 4 }, true)) / (weight:var({ 2, 3, 4 }, { keepdim = true, unbiased = false }) + 1e-5):sqrt()
      return nn.Conv2d._conv_forward(self, input, w, bias)
    end
    local s = Std(2, 3, 3, { padding = 1 })
    local img = wick.randn(1, 2, 5, 5)
    local ws = (s.weight - s.weight:mean({ 2, 3, 4 }, true)) /
      (s.weight:var({ 2, 3, 4 }, { keepdim = true, unbiased = false }) + 1e-5):sqrt()
    assert_close(s(img), wick.nn.functional.conv2d(img, ws, s.bias, { padding = 1 }), 1e-5)
    local C1 = nn.Conv1d:extend("C1")
    function C1:_conv_forward(input, weight, bias) return nn.Conv1d._conv_forward(self, input, weight * 0, bias) end
    local z = C1(2, 2, 3, { bias = false })
    assert.are.equal(0, z(wick.randn(2, 6)):abs():sum():item()) -- unbatched input too
  end)
end)

describe("nn.ModuleList", function()
  it("is walked by ipairs and #, so a GPT's blocks run and train", function()
    local model = Tiny(7, 4, 3)
    assert.are.equal(3, #model.transformer.h)
    local n = 0
    for i, block in ipairs(model.transformer.h) do
      n = n + 1
      assert.are.equal(i, n)
      assert.are.equal("Block", getmetatable(block).__name)
    end
    assert.are.equal(3, n)
    local idx = wick.tensor({ { 1, 2, 3 } }, { dtype = "int64" })
    model(idx)
    assert.are.equal(3, model.blocks_run)
    -- every block's parameters are trained
    local names = names_of_params(model)
    for i = 1, 3 do assert.is_truthy(table.concat(names, " "):find("transformer.h." .. i .. ".attn.weight", 1, true)) end
    local before = model.transformer.h[3].attn.weight:clone()
    local opt = wick.optim.SGD(model:parameters(), { lr = 0.1 })
    local loss = model(idx):pow(2):mean()
    loss:backward()
    opt:step()
    assert.is_false(before:equal(model.transformer.h[3].attn.weight))
  end)

  it("append, extend, insert, pop, get, and assignment by index", function()
    local a, b, c, d = nn.Linear(1, 1), nn.Linear(1, 2), nn.Linear(2, 2), nn.ReLU()
    local list = nn.ModuleList()
    assert.are.equal(0, #list)
    assert.is_true(rawequal(list, list:append(a)))
    list:extend({ b, c })
    list:insert(2, d)
    assert.are.equal(4, #list)
    assert.is_true(rawequal(d, list[2]) and rawequal(b, list[3]) and rawequal(c, list:get(-1)))
    list[5] = nn.Tanh() -- one past the end appends
    assert.are.equal(5, list:len())
    assert.is_true(rawequal(list:pop(), list[5] == nil and list:pop(4) or nil) or true)
    assert.are.equal(3, #list)
    list[2] = nn.Linear(1, 3) -- replaces in its place
    assert.are.equal("Linear", getmetatable(list[2]).__name)
    assert.are.same({ "1.weight", "1.bias", "2.weight", "2.bias", "3.weight", "3.bias" }, names_of_params(list))
    assert_error_has(function() list[7] = nn.ReLU() end, "index 7 out of range")
    assert_error_has(function() list:append(5) end, "expected a module")
    assert_error_has(function() nn.ModuleList({ nn.ReLU(), "x" }) end, "expected a module")
    assert_error_has(function() list:get(9) end, "out of range")
  end)

  it("a ModuleList of a ModuleList names its children by path", function()
    local outer = nn.ModuleList({ nn.ModuleList({ nn.Linear(1, 1) }), nn.Linear(1, 1) })
    assert.are.same({ "1.1.weight", "1.1.bias", "2.weight", "2.bias" }, names_of_params(outer))
  end)

  it("Sequential is an array too: ipairs, #, seq[i], and seq[i] = m replaces the layer used by forward", function()
    local seq = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
    local n = 0
    for _ in ipairs(seq) do n = n + 1 end
    assert.are.equal(2, n)
    assert.are.equal(2, #seq)
    seq[2] = nn.Tanh()
    local x = wick.tensor({ { 1.0, -2.0 } })
    assert_close(seq(x), seq[1](x):tanh(), 1e-6)
    seq:append(nn.Linear(2, 1))
    assert.are.same({ 1, 1 }, support.shape_of(seq(x)))
  end)

  it("add_module and register_module append to a Sequential: forward, #, [i], ipairs, print, state_dict agree", function()
    -- torchvision's VGG slices: slice:add_module(str(x), layer) on an empty Sequential
    local s = nn.Sequential()
    s:add_module("0", nn.Linear(3, 2))
    s:register_module("1", nn.ReLU())
    local x = wick.randn(4, 3)
    assert.are.same({ 4, 2 }, support.shape_of(s(x)))
    assert.are.equal(2, #s)
    assert.are.same({ "1.weight", "1.bias" }, names_of_params(s))
    -- a slice from index 2 on (fast_neural_style's Vgg16): PyTorch's names, 1-based, and its checkpoint loads
    local features = nn.Sequential(nn.Linear(2, 2), nn.ReLU(), nn.Linear(2, 3), nn.ReLU())
    local slice = nn.Sequential()
    for k = 2, 3 do slice:add_module(tostring(k), features[k + 1]) end
    assert.are.same({ "3.weight", "3.bias" }, names_of_params(slice))
    slice:load_state_dict({ ["2.weight"] = wick.ones(3, 2), ["2.bias"] = wick.zeros(3) }) -- torch.save's names
    assert.are.equal(6, features[3].weight:sum():item())
    local clash = nn.Sequential()
    clash:add_module("2", nn.ReLU()) -- named 3
    clash:append(nn.ReLU())
    clash:append(nn.ReLU()) -- position 3
    assert_error_has(function() clash:state_dict() end, "entries 1 and 3 are both named '3'")
    -- a named child: appended in registration order, keeping its name
    local t = nn.Sequential(nn.Linear(3, 3))
    t:add_module("extra", nn.Linear(3, 2))
    t:append(nn.Tanh())
    t.head = nn.Linear(2, 1) -- an attribute that is a module registers it, as in PyTorch
    assert.are.equal(4, #t)
    assert.are.equal(4, t:len())
    assert.is_true(rawequal(t[2], t.extra) and rawequal(t[4], t.head) and rawequal(t[-1], t.head))
    local n = 0
    for _ in ipairs(t) do n = n + 1 end
    assert.are.equal(4, n)
    assert_close(t(x), t.head(t[3](t.extra(t[1](x)))), 1e-6)
    assert.are.same({ "1.weight", "1.bias", "extra.weight", "extra.bias", "head.weight", "head.bias" },
      names_of_params(t))
    assert.are.same(names_of_params(t), sorted_keys(t:state_dict()) and names_of_params(t))
    assert.is_not_nil(t:state_dict()["extra.weight"])
    assert.are.equal("Sequential(\n  (1): Linear(in_features=3, out_features=3, bias=True)\n"
      .. "  (extra): Linear(in_features=3, out_features=2, bias=True)\n  (3): Tanh()\n"
      .. "  (head): Linear(in_features=2, out_features=1, bias=True)\n)", tostring(t))
    -- the same name again replaces in place; insert and pop keep the names with their modules
    t:add_module("extra", nn.Linear(3, 2, false))
    assert.is_nil(t[2].bias)
    t:insert(1, nn.Identity())
    assert.is_true(rawequal(t[3], t.extra))
    assert.are.equal("Identity", getmetatable(t:pop(1)).__name)
    assert.is_true(rawequal(t[2], t.extra))
    local keys = {}
    for name in t:named_children() do keys[#keys + 1] = name end
    assert.are.same({ "1", "extra", "3", "head" }, keys)
    -- a state dict round trip by those names
    local u = nn.Sequential(nn.Linear(3, 3))
    u:add_module("extra", nn.Linear(3, 2, false))
    u:append(nn.Tanh())
    u.head = nn.Linear(2, 1)
    u:load_state_dict(t:state_dict())
    assert_close(u(x), t(x), 1e-6)
    -- bad names
    assert_error_has(function() t:add_module("a.b", nn.ReLU()) end, "cannot add a module named 'a.b'")
    assert_error_has(function() t:add_module("forward", nn.ReLU()) end, "cannot add a module named 'forward'")
  end)

  it("indices count from 1: [0] and past the end are errors, [-1] the last, as tensors' are", function()
    local m = nn.Sequential(nn.Linear(3, 1), nn.ReLU())
    assert_error_has(function() return m[0].bias end, "Sequential: index 0 is invalid: indices count from 1")
    assert_error_has(function() return m[4] end, "Sequential: index 4 is out of range for 2 entries")
    assert_error_has(function() return m[-3] end, "index -3 is out of range")
    assert.is_nil(m[3]) -- #m + 1: where ipairs stops and an append goes
    assert.are.equal("ReLU", getmetatable(m[-1]).__name)
    assert_error_has(function() return nn.ModuleList({ nn.ReLU() })[0] end, "ModuleList: index 0 is invalid")
    -- a subclass keeps it
    local Sub = nn.Sequential:extend("SubSeq")
    local sub = Sub(nn.ReLU())
    sub:add_module("act", nn.Tanh())
    assert.are.equal("Tanh", getmetatable(sub.act).__name)
    assert_error_has(function() return sub[0] end, "index 0 is invalid")
  end)
end)

describe("nn.ModuleDict", function()
  it("keeps insertion order, reads and writes d[name], replaces in place", function()
    local d = nn.ModuleDict()
    d.conv = nn.Conv2d(1, 2, 3)
    d["act"] = nn.ReLU()
    d.fc = nn.Linear(2, 2)
    assert.are.same({ "conv", "act", "fc" }, keys_of(d:keys()))
    d.conv = nn.Conv2d(1, 4, 3) -- replaced in its place
    local names, values = {}, {}
    for k, v in d:items() do names[#names + 1] = k; values[#values + 1] = v end
    assert.are.same({ "conv", "act", "fc" }, names)
    assert.are.equal(4, values[1].out_channels)
    local n = 0
    for v in d:values() do n = n + 1; assert.is_true(rawequal(v, values[n])) end
    assert.are.equal(3, d:len())
    assert.are.same({ "conv.weight", "conv.bias", "fc.weight", "fc.bias" }, names_of_params(d))
    assert.is_true(d:contains("fc"))
    assert.is_false(d:contains("items"))
    assert.is_true(rawequal(values[3], d:pop("fc")))
    assert.are.same({ "conv", "act" }, keys_of(d:keys()))
  end)

  it("update takes a ModuleDict, an array of {name, module} pairs, or a table (sorted names)", function()
    local d = nn.ModuleDict({ { "z", nn.ReLU() }, { "a", nn.Tanh() } })
    assert.are.same({ "z", "a" }, keys_of(d:keys()))
    d:update({ m = nn.ReLU(), b = nn.ReLU() })
    assert.are.same({ "z", "a", "b", "m" }, keys_of(d:keys()))
    local e = nn.ModuleDict():update(d)
    assert.are.same({ "z", "a", "b", "m" }, keys_of(e:keys()))
  end)

  it("refuses names of its methods, non-string keys and non-modules", function()
    local d = nn.ModuleDict()
    assert_error_has(function() d.items = nn.ReLU() end, "invalid key 'items'")
    assert_error_has(function() d[1] = nn.ReLU() end, "keys must be strings")
    assert_error_has(function() d.x = wick.ones(1) end, "expected a module")
    d.x = 3 -- not a module: a plain attribute, as PyTorch's Module.__setattr__ keeps one, not an entry
    assert.are.equal(3, d.x)
    assert.are.equal(0, d:len())
    assert_error_has(function() d:update({ { "a" } }) end, "entry 1 must be a {name, value} pair")
  end)
end)

describe("ParameterList and ParameterDict", function()
  it("hold parameters found by parameters() and state_dict()", function()
    local M = nn.Module:extend("WithParams")
    function M:init()
      self.plist = nn.ParameterList({ wick.zeros(2), wick.ones(3) })
      self.pdict = nn.ParameterDict({ { "scale", wick.ones(1) } })
    end
    local m = M()
    assert.are.same({ "plist.1", "plist.2", "pdict.scale" }, names_of_params(m))
    for _, p in ipairs(m:parameters()) do assert.is_true(p.requires_grad) end
    assert.are.equal(2, #m.plist)
    assert_error_has(function() m.plist:append("x") end, "expected a tensor")
  end)
end)

describe("the container rule", function()
  it("a plain table of modules assigned in init is trained (array order, then sorted string keys)", function()
    local Net = nn.Module:extend("PlainTables")
    function Net:init()
      self.layers = { nn.Linear(2, 2), nn.Linear(2, 2) }
      self.heads = { zeta = nn.Linear(2, 1), alpha = nn.Linear(2, 1), nested = { nn.Linear(1, 1) } }
      self.config = { hidden = 2, names = { "a", "b" } } -- holds no module: not a container
    end
    local net = Net()
    assert.are.same({ "layers.1.weight", "layers.1.bias", "layers.2.weight", "layers.2.bias",
      "heads.alpha.weight", "heads.alpha.bias", "heads.nested.1.weight", "heads.nested.1.bias",
      "heads.zeta.weight", "heads.zeta.bias" }, names_of_params(net))
    assert.are.same(names_of_params(net), sorted_keys(net:state_dict()) and names_of_params(net))
    local sd = net:state_dict()
    assert.are.equal(10, #sorted_keys(sd))
    -- the optimizer sees them: a step changes a weight in the table
    local w = net.layers[2].weight
    local before = w:clone()
    local opt = wick.optim.SGD(net:parameters(), { lr = 1 })
    w:sum():backward()
    opt:step()
    assert.is_false(before:equal(w))
    -- to() reaches them
    net:to("float64")
    assert.are.equal("float64", net.heads.nested[1].weight.dtype)
  end)

  it("the order is the order of first assignment, and a replaced child keeps its place", function()
    local Net = nn.Module:extend("Order")
    function Net:init()
      self.b = nn.Linear(1, 1)
      self.a = nn.Linear(1, 1)
      self.b = nn.Linear(1, 2)
    end
    local net = Net()
    assert.are.same({ "b.weight", "b.bias", "a.weight", "a.bias" }, names_of_params(net))
    assert.are.same({ 2, 1 }, net:parameters()[1]:size())
  end)

  it("a module under a _private name is found too, as in PyTorch", function()
    local Net = nn.Module:extend("Private")
    function Net:init()
      self._proj = nn.Linear(2, 2)
      self._scale = 3
    end
    assert.are.same({ "_proj.weight", "_proj.bias" }, names_of_params(Net()))
  end)

  it("a table holding modules under keys it cannot name is an error, never skipped", function()
    local Net = nn.Module:extend("Unnamable")
    function Net:init() self.layers = { [0] = nn.Linear(1, 1), nn.Linear(1, 1) } end
    assert_error_has(function() Net():parameters() end, "the table 'layers' holds a Linear under the key 0")
    local Holes = nn.Module:extend("Holes")
    function Holes:init() self.layers = { nn.Linear(1, 1), nil, nn.Linear(1, 1) } end
    assert_error_has(function() Holes():state_dict() end, "under the key 3")
    local Obj = nn.Module:extend("Obj")
    function Obj:init() self.thing = setmetatable({ inner = nn.Linear(1, 1) }, {}) end
    assert_error_has(function() Obj():parameters() end, "holding a Linear at 'inner'")
    local Nested = nn.Module:extend("Nested")
    function Nested:init() self.w = { [0] = { l = nn.Linear(1, 1) } } end
    assert_error_has(function() Nested():parameters() end, "holds a table with a module or a parameter under the key 0")
  end)

  it("plain tensors in a namespace under key 0 are attributes, as PyTorch's (RWKV's self.w.blocks[0])", function()
    local Rwkv = nn.Module:extend("RwkvLike")
    function Rwkv:init() self.w = { blocks = { [0] = { ln0 = { weight = wick.randn(2) } } } } end
    local m = Rwkv()
    assert.are.equal(m, m:eval())
    assert.are.equal(0, #m:parameters())
    assert.is_nil(next(m:state_dict()))
  end)

  it("an object holding tensors (a distribution, Bayes by Backprop's Gaussian) is a plain attribute, as in PyTorch", function()
    local Gaussian = {}
    Gaussian.__index = Gaussian
    local BL = nn.Module:extend("BayesianLinear")
    function BL:init()
      self.weight_mu = nn.Parameter(wick.zeros(3, 2))
      self.weight_rho = nn.Parameter(wick.zeros(3, 2))
      self.weight = setmetatable({ mu = self.weight_mu, rho = self.weight_rho }, Gaussian)
      self.prior = wick.distributions.Normal(wick.zeros(2), wick.ones(2))
    end
    local m = BL()
    assert.are.equal(2, #m:parameters())
    local keys = {}
    for k in pairs(m:state_dict()) do keys[#keys + 1] = k end
    table.sort(keys)
    assert.are.same({ "weight_mu", "weight_rho" }, keys)
    m:load_state_dict(m:state_dict())
    assert.is_true(rawequal(m.weight.mu, m.weight_mu))
  end)
end)

describe("tied weights", function()
  it("appear under both names in state_dict, once in parameters(), and load strictly", function()
    wick.manual_seed(3)
    local model = Tiny(6, 4, 2)
    local sd = model:state_dict()
    assert.is_not_nil(sd["transformer.wte.weight"])
    assert.is_not_nil(sd["lm_head.weight"])
    local names = names_of_params(model)
    local count = 0
    for _, n in ipairs(names) do if n == "transformer.wte.weight" or n == "lm_head.weight" then count = count + 1 end end
    assert.are.equal(1, count)
    assert.are.equal(#names, #model:parameters())
    -- another model loads it strictly; the tie holds afterwards
    local other = Tiny(6, 4, 2)
    local r = other:load_state_dict(sd, { strict = true })
    assert.are.same({}, r.missing_keys)
    assert.are.same({}, r.unexpected_keys)
    assert.is_true(other.lm_head.weight:equal(model.lm_head.weight))
    assert.is_true(rawequal(other.lm_head.weight, other.transformer.wte.weight))
    -- a checkpoint lacking one of the two names is missing a key, as in PyTorch
    local partial = {}
    for k, v in pairs(sd) do if k ~= "lm_head.weight" then partial[k] = v end end
    assert_error_has(function() other:load_state_dict(partial) end, '"lm_head.weight"')
  end)
end)

describe("PyTorch's names (nn.utils.from_pytorch_names / to_pytorch_names)", function()
  it("renumbers only purely numeric components: ln_1 stays ln_1", function()
    local r = nn.utils.from_pytorch_names({ ["transformer.h.0.ln_1.weight"] = 1, ["transformer.h.1.ln_2.bias"] = 2,
      ["0.weight"] = 3, ["layers.10.block_2.3.x"] = 4, ["fc1.weight"] = 5 })
    assert.are.same({ ["transformer.h.1.ln_1.weight"] = 1, ["transformer.h.2.ln_2.bias"] = 2, ["1.weight"] = 3,
      ["layers.11.block_2.4.x"] = 4, ["fc1.weight"] = 5 }, r)
    local back = nn.utils.to_pytorch_names(r)
    assert.are.same({ ["transformer.h.0.ln_1.weight"] = 1, ["transformer.h.1.ln_2.bias"] = 2, ["0.weight"] = 3,
      ["layers.10.block_2.3.x"] = 4, ["fc1.weight"] = 5 }, back)
    assert_error_has(function() nn.utils.to_pytorch_names({ ["h.0.w"] = 1 }) end, "has the index 0")
    assert_error_has(function() nn.utils.from_pytorch_names({ ["1.w"] = 1, ["01.w"] = 2 }) end, "both become '2.w'")
  end)

  it("maps a real nanoGPT-style state dict (written by PyTorch) both ways, tied weights under both names", function()
    local sd = wick.load("spec/fixtures/pt_tiny_gpt.pt")
    local expected = dofile("spec/fixtures/pt_tiny_gpt_expected.lua")
    assert.are.same((function() local k = {}; for i, v in ipairs(expected.keys) do k[i] = v end; table.sort(k); return k end)(),
      sorted_keys(sd))
    local mapped = nn.utils.from_pytorch_names(sd)
    assert.is_not_nil(mapped["transformer.h.1.ln_1.weight"])
    assert.is_not_nil(mapped["transformer.h.2.ln_2.bias"])
    assert.is_nil(mapped["transformer.h.0.ln_1.weight"])
    assert.is_true(mapped["transformer.h.1.ln_1.weight"]:equal(sd["transformer.h.0.ln_1.weight"]))
    assert.is_true(mapped["transformer.h.1.ln_2.weight"]:equal(sd["transformer.h.0.ln_2.weight"]))
    assert.is_true(mapped["lm_head.weight"]:equal(mapped["transformer.wte.weight"]))
    assert.are.same(sorted_keys(sd), sorted_keys(nn.utils.to_pytorch_names(mapped)))
    for k, v in pairs(nn.utils.to_pytorch_names(mapped)) do assert.is_true(rawequal(v, sd[k])) end
  end)
end)

-- nanoGPT's GPT (model.py), ported as a user would, at the fixture's size
local GPT = {}
do
  local F = nn.functional
  local Attention = nn.Module:extend("CausalSelfAttention")
  function Attention:init(n_embd, n_head)
    self.c_attn = nn.Linear(n_embd, 3 * n_embd)
    self.c_proj = nn.Linear(n_embd, n_embd)
    self.n_head, self.n_embd = n_head, n_embd
  end
  function Attention:forward(x)
    local B, T, C = x:size(1), x:size(2), x:size(3)
    local qkv = self.c_attn(x)
    local function heads(i)
      return qkv:narrow(3, i * C + 1, C):view(B, T, self.n_head, C / self.n_head):transpose(2, 3)
    end
    local q, k, v = heads(0), heads(1), heads(2)
    local att = q:matmul(k:transpose(-2, -1)) * (1 / math.sqrt(C / self.n_head))
    local mask = {}
    for i = 1, T do
      mask[i] = {}
      for j = 1, T do mask[i][j] = j > i and -math.huge or 0 end
    end
    att = F.softmax(att + wick.tensor(mask, { dtype = x.dtype }), -1)
    local y = att:matmul(v):transpose(2, 3):contiguous():view(B, T, C)
    return self.c_proj(y)
  end
  local MLP = nn.Module:extend("MLP")
  function MLP:init(n_embd)
    self.c_fc = nn.Linear(n_embd, 4 * n_embd)
    self.gelu = nn.GELU()
    self.c_proj = nn.Linear(4 * n_embd, n_embd)
  end
  function MLP:forward(x) return self.c_proj(self.gelu(self.c_fc(x))) end
  local GBlock = nn.Module:extend("Block")
  function GBlock:init(n_embd, n_head)
    self.ln_1 = nn.LayerNorm(n_embd)
    self.attn = Attention(n_embd, n_head)
    self.ln_2 = nn.LayerNorm(n_embd)
    self.mlp = MLP(n_embd)
  end
  function GBlock:forward(x)
    x = x + self.attn(self.ln_1(x))
    return x + self.mlp(self.ln_2(x))
  end
  GPT.Model = nn.Module:extend("GPT")
  function GPT.Model:init(vocab_size, block_size, n_layer, n_head, n_embd)
    local h = {}
    for i = 1, n_layer do h[i] = GBlock(n_embd, n_head) end
    self.transformer = nn.ModuleDict({
      { "wte", nn.Embedding(vocab_size, n_embd) },
      { "wpe", nn.Embedding(block_size, n_embd) },
      { "h", nn.ModuleList(h) },
      { "ln_f", nn.LayerNorm(n_embd) },
    })
    self.lm_head = nn.Linear(n_embd, vocab_size, false)
    self.transformer.wte.weight = self.lm_head.weight
  end
  function GPT.Model:forward(idx)
    local t = idx:size(2)
    local pos = wick.arange(1, t + 1, { dtype = "int64" })
    local x = self.transformer.wte(idx) + self.transformer.wpe(pos)
    for _, block in ipairs(self.transformer.h) do x = block(x) end
    return self.lm_head(self.transformer.ln_f(x))
  end
end

describe("a PyTorch nanoGPT checkpoint in a wick port of nanoGPT's GPT", function()
  it("loads strictly (both tied names present) and gives PyTorch's logits", function()
    local expected = dofile("spec/fixtures/pt_tiny_gpt_expected.lua")
    local model = GPT.Model(11, 6, 2, 2, 8):double():eval()
    local sd = nn.utils.from_pytorch_names(wick.load("spec/fixtures/pt_tiny_gpt.pt"))
    local r = model:load_state_dict(sd, { strict = true })
    assert.are.same({}, r.missing_keys)
    assert.are.same({}, r.unexpected_keys)
    assert.is_true(rawequal(model.lm_head.weight, model.transformer.wte.weight)) -- the tie survives loading
    assert.are.same(sorted_keys(sd), sorted_keys(model:state_dict()))
    local idx = wick.tensor(expected.idx, { dtype = "int64" }) + 1 -- PyTorch's 0-based ids
    local logits = wick.no_grad(model, idx)
    support.assert_close(support.values_of(logits), support.values_of(wick.tensor(expected.logits, F64)), 1e-10)
    -- and back: the wick model's state dict in PyTorch's names is the checkpoint's key set
    assert.are.same(sorted_keys(wick.load("spec/fixtures/pt_tiny_gpt.pt")),
      sorted_keys(nn.utils.to_pytorch_names(model:state_dict())))
  end)
end)

describe("wick.nn.init", function()
  local init = nn.init

  it("fills in place, returns the tensor, records no gradient", function()
    local w = nn.Linear(30, 20).weight
    for _, call in ipairs({
      function() return init.uniform_(w, -0.1, 0.1) end, function() return init.normal_(w) end,
      function() return init.zeros_(w) end, function() return init.ones_(w) end,
      function() return init.constant_(w, 0.5) end, function() return init.xavier_uniform_(w) end,
      function() return init.xavier_normal_(w) end, function() return init.kaiming_uniform_(w) end,
      function() return init.kaiming_normal_(w) end, function() return init.trunc_normal_(w, 0, 0.02) end,
      function() return init.orthogonal_(w) end, function() return init.eye_(w) end,
    }) do
      assert.is_true(rawequal(w, call()))
      assert.is_true(w.requires_grad)
      assert.is_nil(w.grad_fn)
    end
  end)

  it("constant, zeros, ones, eye are exact", function()
    local t = wick.empty(3, 4, F64)
    assert.is_true(init.constant_(t, 0.25):equal(wick.full({ 3, 4 }, 0.25, F64)))
    assert.is_true(init.zeros_(t):equal(wick.zeros(3, 4, F64)))
    assert.is_true(init.ones_(t):equal(wick.ones(3, 4, F64)))
    assert.is_true(init.eye_(t):equal(wick.eye(3, 4, F64)))
  end)

  it("uniform_ and normal_ have the asked bounds and moments", function()
    wick.manual_seed(7)
    local t = wick.empty(200, 500)
    init.uniform_(t, -3, 5)
    assert.is_true(t:min():item() >= -3 and t:max():item() <= 5)
    assert.is_true(math.abs(t:mean():item() - 1) < 0.05)
    init.normal_(t, 2, 0.5)
    assert.is_true(math.abs(t:mean():item() - 2) < 0.01)
    assert.is_true(math.abs(t:std():item() - 0.5) < 0.01)
    init.uniform_(t, { a = 1, b = 2 })
    assert.is_true(t:min():item() >= 1)
  end)

  it("fans as PyTorch's _calculate_fan_in_and_fan_out: the receptive field counts", function()
    local fan_in, fan_out = init._calculate_fan_in_and_fan_out(wick.empty(32, 16, 3, 5))
    assert.are.equal(16 * 15, fan_in)
    assert.are.equal(32 * 15, fan_out)
    assert_error_has(function() init.xavier_uniform_(wick.empty(5)) end,
      "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
  end)

  it("xavier and kaiming use PyTorch's bounds and standard deviations", function()
    wick.manual_seed(11)
    local t = wick.empty(400, 300, F64)
    local bound = math.sqrt(6 / 700)
    init.xavier_uniform_(t)
    assert.is_true(t:abs():max():item() <= bound and t:abs():max():item() > 0.99 * bound)
    init.xavier_uniform_(t, 2)
    assert.is_true(t:abs():max():item() > 1.98 * bound)
    init.xavier_normal_(t, { gain = 3 })
    assert.is_true(math.abs(t:std():item() / (3 * math.sqrt(2 / 700)) - 1) < 0.02)
    -- a = sqrt(5) is nn.Linear's default: U(-1/sqrt(fan_in), 1/sqrt(fan_in))
    init.kaiming_uniform_(t, math.sqrt(5))
    assert.is_true(t:abs():max():item() <= 1 / math.sqrt(300) and t:abs():max():item() > 0.99 / math.sqrt(300))
    init.kaiming_normal_(t, 0, "fan_out", "relu")
    assert.is_true(math.abs(t:std():item() / math.sqrt(2 / 400) - 1) < 0.02)
    init.kaiming_normal_(t, { mode = "fan_in", nonlinearity = "relu" })
    assert.is_true(math.abs(t:std():item() / math.sqrt(2 / 300) - 1) < 0.02)
    init.kaiming_uniform_(t, { nonlinearity = "linear" })
    assert.is_true(t:abs():max():item() <= math.sqrt(3 / 300))
  end)

  it("trunc_normal_ stays in [a, b] with the truncated normal's spread", function()
    wick.manual_seed(5)
    local t = wick.empty(300, 300, F64)
    init.trunc_normal_(t)
    assert.is_true(t:min():item() >= -2 and t:max():item() <= 2)
    assert.is_true(math.abs(t:std():item() - 0.8796) < 0.01) -- std of N(0, 1) cut at +-2
    init.trunc_normal_(t, { mean = 1, std = 0.02, a = 0.98, b = 1.1 })
    assert.is_true(t:min():item() >= 0.98 and t:max():item() <= 1.1)
    assert.is_true(t:mean():item() > 1) -- cut at -1 sd and +5 sd: the mean moves up
    init.trunc_normal_(t, 0, 1, 3, 4) -- far in the tail, still inside
    assert.is_true(t:min():item() >= 3 and t:max():item() <= 4)
  end)

  it("orthogonal_ gives orthonormal rows (or columns)", function()
    local w = init.orthogonal_(wick.empty(4, 9, F64))
    assert_close(w:matmul(w:t()), wick.eye(4, F64), 1e-10)
    local tall = init.orthogonal_(wick.empty(9, 4, F64), 2)
    assert_close(tall:t():matmul(tall), wick.eye(4, F64) * 4, 1e-10)
  end)

  it("calculate_gain as PyTorch", function()
    assert.are.equal(1, init.calculate_gain("linear"))
    assert.are.equal(1, init.calculate_gain("conv2d"))
    assert.are.equal(5 / 3, init.calculate_gain("tanh"))
    assert.are.equal(math.sqrt(2), init.calculate_gain("relu"))
    assert.are.equal(math.sqrt(2 / (1 + 0.01 ^ 2)), init.calculate_gain("leaky_relu"))
    assert.are.equal(math.sqrt(2 / 1.04), init.calculate_gain("leaky_relu", 0.2))
    assert.are.equal(0.75, init.calculate_gain("selu"))
    assert_error_has(function() init.calculate_gain("swish") end, "Unsupported nonlinearity swish")
  end)

  it("checks its arguments and options", function()
    local t = wick.empty(3, 3)
    assert_error_has(function() init.normal_(t, { sdt = 1 }) end, "normal_: unknown option 'sdt'")
    assert_error_has(function() init.normal_(t, 0, -1) end, "std >= 0")
    assert_error_has(function() init.uniform_(t, "a") end, "expected a number for option 'a'")
    assert_error_has(function() init.kaiming_uniform_(t, { mode = "fan_avg" }) end, "invalid value 'fan_avg' for argument 'mode'")
    assert_error_has(function() init.kaiming_normal_(t, 0, "fan_in", "relu", nil, 5) end, "at most")
    assert_error_has(function() init.trunc_normal_(t, 0, 1, 2, 1) end, "a <= b")
    assert_error_has(function() init.xavier_uniform_(nil) end, "expected a tensor")
    assert_error_has(function() init.normal_(wick.zeros(3, { dtype = "int64" })) end, "floating-point")
    assert_error_has(function() init.normal_(t, 0, 1, { std = 2 }) end, "given both")
  end)
end)

describe("layer constructors take PyTorch's positional arguments, then options", function()
  it("Conv2d, Linear, Dropout, LayerNorm, Embedding, MaxPool2d, BatchNorm, GELU", function()
    local c = nn.Conv2d(1, 32, 3, 1)
    assert.are.same({ 1, 1 }, c.stride) -- PyTorch's tuples
    local x = wick.randn(1, 1, 8, 8)
    assert.are.same({ 1, 4, 4, 4 }, support.shape_of(nn.Conv2d(1, 4, 3, 2, 1)(x)))
    assert.are.same({ 1, 4, 8, 8 }, support.shape_of(nn.Conv2d(1, 4, 3, { stride = 1, padding = 1 })(x)))
    assert.are.same({ 1, 4, 6, 6 }, support.shape_of(nn.Conv2d(1, 4, { 3, 3 }, { 1, 1 })(x)))
    assert.is_nil(nn.Conv2d(1, 4, 3, 1, 0, 1, 1, false).bias)
    assert.is_nil(nn.Linear(10, 5, false).bias)
    assert.is_not_nil(nn.Linear(10, 5, true).bias)
    assert.is_nil(nn.Linear(10, 5, { bias = false }).bias)
    assert.are.equal(0.1, nn.Dropout(0.1).p)
    assert.are.equal(0.1, nn.Dropout(0.1, false).p)
    assert.are.equal(1e-6, nn.LayerNorm(128, 1e-6).eps)
    assert.is_nil(nn.LayerNorm(8, 1e-5, true, false).bias)
    assert.is_nil(nn.LayerNorm(8, { bias = false }).bias)
    assert.are.same({ 10, 3 }, nn.Embedding(10, 3).weight:size())
    assert.are.same({ 1, 1, 4, 4 }, support.shape_of(nn.MaxPool2d(2)(x)))
    assert.are.same({ 1, 1, 3, 3 }, support.shape_of(nn.MaxPool2d(3, 2)(x)))
    assert.are.same({ 1, 1, 4, 4 }, support.shape_of(nn.AvgPool2d(2)(x)))
    local bn = nn.BatchNorm2d(4, 1e-3, 0.2)
    assert.are.equal(1e-3, bn.eps)
    assert.are.equal(0.2, bn.momentum)
    local v = wick.tensor({ -1.5, 0.3, 2.0 }, F64)
    local tanh_form = v * ((v + v:pow(3) * 0.044715) * math.sqrt(2 / math.pi)):tanh():add(1) * 0.5
    assert_close(nn.GELU("tanh")(v), tanh_form, 1e-12)
    assert_close(nn.GELU({ approximate = "tanh" })(v), tanh_form, 1e-12)
    assert_close(nn.GELU()(v), v:gelu(), 1e-12)
    assert.is_not_nil(nn.ReLU(true))
    assert.are.equal(3, nn.Softmax(3).dim)
  end)

  it("unknown or ill-typed options are errors naming them", function()
    assert_error_has(function() nn.Linear(3, 4, { bais = false }) end, "Linear: unknown option 'bais'")
    assert_error_has(function() nn.Linear(3, 4, "no") end, "expected a boolean for option 'bias'")
    assert_error_has(function() nn.Conv2d(1, 2, 3, { strid = 2 }) end, "Conv2d: unknown option 'strid'")
    assert_error_has(function() nn.Conv2d(1, 2, 3, "2") end, "option 'stride'")
    assert_error_has(function() nn.Conv2d(1, 2, 3, 1, { stride = 2 }) end, "given both")
    assert_error_has(function() nn.LayerNorm(4, { epsilon = 1 }) end, "LayerNorm: unknown option 'epsilon'")
    assert_error_has(function() nn.MaxPool2d(2, { strid = 1 }) end, "MaxPool2d: unknown option 'strid'")
    assert_error_has(function() nn.Dropout({ prob = 0.1 }) end, "Dropout: unknown option 'prob'")
    assert_error_has(function() nn.Dropout(0.1, false, 3) end, "at most 2 positional")
    assert_error_has(function() nn.BatchNorm1d(4, { momentun = 0.1 }) end, "unknown option 'momentun'")
    assert_error_has(function() nn.GELU("exact") end, "invalid value 'exact' for argument 'approximate'")
    assert_error_has(function() nn.Embedding(4, 2, 0) end, "padding_idx")
  end)

  it("losses: reduction goes in the options table, PyTorch's positional weight is a tensor", function()
    local x = wick.randn(4, 3, F64)
    local t = wick.tensor({ 1, 3, 2, 2 }, { dtype = "int64" })
    local F = nn.functional
    assert_error_has(function() F.cross_entropy(x, t, "sum") end,
      "cross_entropy: expected an options table as argument 3, got string 'sum'; reduction")
    assert_error_has(function() F.cross_entropy(x, t, { reductoin = "sum" }) end, "unknown option 'reductoin'")
    assert_error_has(function() F.cross_entropy(x, t, { reduction = "summ" }) end, "invalid value 'summ'")
    assert_error_has(function() F.mse_loss(x, x, "sum") end, "options table")
    assert_error_has(function() nn.CrossEntropyLoss("sum") end, "reduction go in the options table")
    assert_error_has(function() nn.CrossEntropyLoss({ reduction = "avg" }) end, "invalid value 'avg'")
    assert_error_has(function() nn.MSELoss({ weight = wick.ones(3) }) end, "MSELoss: unknown option 'weight'")
    local sum = F.cross_entropy(x, t, { reduction = "sum" })
    assert_close(nn.CrossEntropyLoss({ reduction = "sum" })(x, t), sum, 1e-12)
    assert_close(sum / 4, F.cross_entropy(x, t), 1e-12)
    local w = wick.tensor({ 1, 2, 0.5 }, F64)
    assert_close(F.cross_entropy(x, t, w), F.cross_entropy(x, t, { weight = w }), 1e-12)
    assert_close(nn.CrossEntropyLoss(w)(x, t), F.cross_entropy(x, t, { weight = w }), 1e-12)
    assert_close(nn.CrossEntropyLoss(w, { reduction = "sum" })(x, t), F.cross_entropy(x, t, { weight = w, reduction = "sum" }), 1e-12)
    -- the weight is a buffer of the loss module, not found twice
    local crit = nn.CrossEntropyLoss(w)
    assert.are.same({ "weight" }, sorted_keys(crit:state_dict()))
  end)
end)

describe("errors inside wrappers keep their traceback", function()
  local runner = arg and arg[-1] or "build/wick"
  local function run(code)
    local path = os.tmpname()
    local f = assert(io.open(path, "w"))
    f:write(code)
    f:close()
    local p = assert(io.popen(runner .. " " .. path .. " 2>&1"))
    local out = p:read("*a")
    p:close()
    os.remove(path)
    return out, path
  end

  it("an uncaught error raised inside wick.no_grad shows the user's lines", function()
    local out, path = run('local wick = require("wick")\nlocal function inner()\n  error("boom")\nend\nwick.no_grad(function() inner() end)\n')
    support.assert_contains(out, path .. ":3: boom")
    support.assert_contains(out, path .. ":3: in ") -- the frame of inner ("function 'inner'", "upvalue 'inner'")
    support.assert_contains(out, path .. ":5:")
  end)

  it("a caught error keeps its message as it was, and the grad mode is restored", function()
    local ok, err = pcall(wick.no_grad, function() error("plain") end)
    assert.is_false(ok)
    assert.is_truthy(err:match("^[^\n]*module_spec.lua:%d+: plain$"))
    assert.is_true(wick.is_grad_enabled())
    local ok2, err2 = pcall(wick.cuda.batch, function() error({ code = 1 }) end)
    assert.is_false(ok2)
    assert.are.equal(1, err2.code)
  end)
end)

describe("load_state_dict's arguments", function()
  it("takes strict by position, as PyTorch's load_state_dict(sd, False)", function()
    local m = nn.Linear(2, 2)
    local r = m:load_state_dict({ weight = wick.zeros(2, 2) }, false)
    assert.are.same({ "bias" }, r.missing_keys)
    assert.are.equal(0, m.weight:abs():sum():item())
    assert_error_has(function() m:load_state_dict({ weight = wick.zeros(2, 2) }) end, 'Missing key(s) in state_dict: "bias"')
    assert_error_has(function() m:load_state_dict({}, { strict = false, asign = true }) end, "unknown option 'asign'")
    assert_error_has(function() m:load_state_dict({}, "no") end, "option 'strict'")
  end)
end)

describe("nanoGPT's configure_optimizers, ported", function()
  it("decay / no-decay groups from named_parameters, AdamW with fused accepted", function()
    local model = GPT.Model(11, 6, 2, 2, 8)
    local param_dict = {}
    local names = {}
    for pn, p in model:named_parameters() do
      if p.requires_grad then param_dict[pn] = p; names[#names + 1] = pn end
    end
    local decay_params, nodecay_params = {}, {}
    for _, n in ipairs(names) do
      local p = param_dict[n]
      if p:dim() >= 2 then decay_params[#decay_params + 1] = p else nodecay_params[#nodecay_params + 1] = p end
    end
    local optim_groups = { { params = decay_params, weight_decay = 0.1 }, { params = nodecay_params, weight_decay = 0.0 } }
    local opt = wick.optim.AdamW(optim_groups, { lr = 6e-4, betas = { 0.9, 0.95 }, fused = true })
    -- the tied wte/lm_head weight is one parameter, in the decay group once
    local numel = 0
    for _, p in ipairs(decay_params) do numel = numel + p:numel() end
    local expected = 0
    for _, p in ipairs(model:parameters()) do if p:dim() >= 2 then expected = expected + p:numel() end end
    assert.are.equal(expected, numel)
    assert.are.equal(#model:parameters(), #decay_params + #nodecay_params)
    assert.are.equal(0.1, opt.param_groups[1].weight_decay)
    assert.are.equal(0, opt.param_groups[2].weight_decay)
    -- a training step with the learning-rate schedule written into every group
    local idx = wick.tensor({ { 1, 2, 3 } }, { dtype = "int64" })
    for _, g in ipairs(opt.param_groups) do g.lr = 1e-3 end
    local before = model.transformer.ln_f.bias:clone()
    model(idx):pow(2):mean():backward()
    wick.nn.utils.clip_grad_norm_(model:parameters(), 1.0)
    opt:step()
    opt:zero_grad({ set_to_none = true })
    assert.is_false(before:equal(model.transformer.ln_f.bias))
    assert.is_nil(model.lm_head.weight.grad)
  end)
end)

describe("model:to in one crossing (wick_tensors_to_)", function()
  -- calls of wick's C functions while fn runs (the JIT off, so the hook sees them all)
  local function crossings(fn)
    local core_fns = {}
    for _, v in pairs(wick._core) do if type(v) == "function" then core_fns[v] = true end end
    for _, v in pairs(wick._core.Tensor) do if type(v) == "function" then core_fns[v] = true end end
    local n = 0
    if jit then jit.off() end
    debug.sethook(function()
      local info = debug.getinfo(2, "f")
      if info and core_fns[info.func] then n = n + 1 end
    end, "c")
    local ok, err = pcall(fn)
    debug.sethook()
    if jit then jit.on() end
    assert(ok, err)
    return n
  end
  local unpack = table.unpack or unpack -- luacheck: ignore
  local function stack(n)
    local layers = {}
    for i = 1, n do layers[i] = nn.Linear(3, 3) end
    return nn.Sequential(unpack(layers))
  end

  it("calls into C once, however many parameters the model has", function()
    local meta = wick.device("meta") -- interned (held: device objects are weak): later moves parse no string
    for _, n in ipairs({ 2, 40 }) do
      local m = stack(n)
      for _, p in ipairs(m:parameters()) do p.grad = wick.ones_like(p) end
      assert.are.equal(1, crossings(function() m:to("meta") end), n .. " layers")
      assert.are.equal("meta", m[1].weight.grad.device.type)
    end
    local m = stack(10)
    assert.are.equal(1, crossings(function() m:to("float64") end))
    local cpu = wick.device("cpu")
    assert.are.equal(1, crossings(function() m:to(cpu) end))
  end)

  it("keeps every parameter object, so an optimizer built before keeps working", function()
    wick.manual_seed(1)
    local m = stack(3)
    local params = m:parameters()
    local opt = wick.optim.SGD(m:parameters(), { lr = 0.5 })
    local before = params[1]:clone()
    assert.is_true(rawequal(m, m:to("float64")))
    for i, p in ipairs(m:parameters()) do
      assert.is_true(rawequal(params[i], p))
      assert.are.equal("float64", p.dtype)
      assert.is_true(p.requires_grad)
      assert.is_true(p.is_leaf)
    end
    assert.is_true(params[1]:equal(before:double()))
    local x = wick.randn(4, 3, F64)
    m(x):sum():backward()
    opt:step()
    assert.are.equal("float64", params[1].grad.dtype)
    assert.is_false(params[1]:equal(before:double())) -- the optimizer updated the moved object
  end)

  it("moves existing gradients with their parameters, values kept", function()
    local m = stack(2)
    local w = m[1].weight
    w.grad = wick.full({ 3, 3 }, 0.25)
    m:to("float64")
    assert.are.equal("float64", w.grad.dtype)
    assert.are.same({ 3, 3 }, w.grad:size())
    assert.are.equal(0.25 * 9, w.grad:sum():item())
    assert.is_nil(m[2].weight.grad)
    m:to({ device = "meta", dtype = "float16", non_blocking = true })
    assert.are.equal("meta", w.grad.device.type)
    assert.are.equal("float16", w.grad.dtype)
    assert.are.equal("float16", w.dtype)
  end)

  it("keeps tied weights tied and moves a shared tensor once", function()
    local m = Tiny(6, 4, 2)
    local tied = m.lm_head.weight
    assert.is_true(rawequal(tied, m.transformer.wte.weight))
    -- the same tensor twice in the array, and once more as a grad elsewhere
    local p = wick.ones(2, 2, { requires_grad = true })
    local g = wick.full({ 2, 2 }, 3)
    p.grad = g
    wick._core.tensors_to({ p, p, tied, tied }, wick.device("meta")._code)
    assert.are.equal("meta", p.device.type)
    assert.are.equal("meta", p.grad.device.type)
    m:to("float64")
    assert.is_true(rawequal(m.lm_head.weight, m.transformer.wte.weight))
    assert.is_true(m.lm_head.weight:is_same_storage(m.transformer.wte.weight))
    assert.are.equal("float64", m.transformer.wte.weight.dtype)
  end)

  it("casts only floating-point tensors, and refuses a dtype that is not floating point", function()
    local Net = nn.Module:extend("CountNet")
    function Net:init()
      self.fc = nn.Linear(2, 2)
      self:register_buffer("count", wick.zeros({}, { dtype = "int64" }))
    end
    local m = Net()
    m:to("float64")
    assert.are.equal("int64", m.count.dtype)
    assert.are.equal("float64", m.fc.weight.dtype)
    assert_error_has(function() m:to("int32") end, "int32")
    assert.are.equal("float64", m.fc.weight.dtype) -- nothing moved
    assert_error_has(function() m:to({ device = "meta", dtype = "float99" }) end, "float99")
    assert_error_has(function() m:to("gpu") end, "'gpu'")
    assert_error_has(function() m:to(true) end, "expected a device, a dtype, a tensor or an options table")
    if not wick.cuda.is_available() then assert_error_has(function() m:to(42) end, "cuda:42") end -- an ordinal
    assert.are.equal("cpu", m.fc.weight.device.type)
  end)

  it("moves nothing when one copy fails (a meta tensor cannot go to the CPU)", function()
    local Net = nn.Module:extend("HalfMeta")
    function Net:init()
      self.a = nn.Linear(2, 2)
      self.b = nn.Linear(2, 2, { device = "meta" })
    end
    local m = Net()
    local w = m.a.weight
    local before = w:clone()
    assert_error_has(function() m:to({ device = "cpu", dtype = "float64" }) end, "meta")
    assert.are.equal("float32", w.dtype)
    assert.is_true(w:equal(before))
    assert.are.equal("meta", m.b.weight.device.type)
  end)

  it("a graph built before the move raises at backward instead of mixing old and new data", function()
    -- the weight saved for the input's gradient: its storage's version moved on
    local m = stack(1)
    local y = m(wick.randn(2, 3, { requires_grad = true })):sum()
    m:to("float64")
    assert_error_has(function() y:backward() end, "modified by an inplace operation")
    -- nothing saved: the leaf's gradient no longer fits the leaf
    m = stack(1)
    y = m(wick.randn(2, 3)):sum()
    m:to("meta")
    assert_error_has(function() y:backward() end, "when the graph was built")
    assert.is_nil(m[1].weight.grad)
    m:to({ dtype = "float16" })
    assert.is_nil(m[1].weight.grad)
  end)

  it("cuts a module tensor that has autograd history from its graph", function()
    local Net = nn.Module:extend("Computed")
    function Net:init()
      self.fc = nn.Linear(2, 2)
      self:register_buffer("scaled", self.fc.weight * 2) -- a non-leaf held as state (a registered buffer: the
      -- dtype casts leave a plain attribute as it is, as PyTorch's)
    end
    local m = Net()
    assert.is_false(m.scaled.is_leaf)
    m:to("float64")
    assert.is_true(m.scaled.is_leaf)
    assert.is_nil(m.scaled.grad_fn)
    assert.is_true(m.scaled.requires_grad)
    assert.is_true(m.scaled:equal(m.fc.weight * 2))
  end)

  it("leaves alone a plain tensor attribute assigned after init, as PyTorch does", function()
    local Net = nn.Module:extend("Later")
    function Net:init() self.fc = nn.Linear(2, 2) end
    local m = Net()
    m.data = wick.ones(3) -- after init: a plain attribute, not state
    m.scaled = m.fc.weight * 2
    m:to("float64")
    assert.are.equal("float64", m.fc.weight.dtype)
    assert.are.equal("float32", m.data.dtype)
    assert.is_false(m.scaled.is_leaf)
  end)

  it("leaves views of a parameter's old storage on the old data", function()
    local m = stack(1)
    local w = m[1].weight
    local view = w:detach():narrow(1, 1, 1)
    local before = view:clone()
    m:to("float64")
    assert.is_false(view:is_same_storage(w))
    assert.are.equal("float32", view.dtype)
    assert.is_true(view:equal(before))
  end)
end)

describe("t:_replace (wick_tensor_set_)", function()
  it("takes the data in place, keeping the object, requires_grad and grad", function()
    local t = wick.ones(2, 2, { requires_grad = true })
    local src = wick.full({ 2, 2 }, 5, { dtype = "float64" })
    assert.is_true(rawequal(t, t:_replace(src)))
    assert.are.equal("float64", t.dtype)
    assert.is_true(t.requires_grad)
    assert.is_true(t:is_same_storage(src))
    assert.are.equal(20, t:sum():item())
  end)

  it("refuses a non-leaf, a non-floating source for a tensor that requires grad, and a grad that would not fit", function()
    local a = wick.ones(2, { requires_grad = true })
    local b = a * 2
    assert_error_has(function() b:_replace(wick.ones(2)) end, "autograd history")
    assert_error_has(function() a:_replace(wick.ones(2, { dtype = "int64" })) end, "floating point")
    a.grad = wick.ones(2)
    assert_error_has(function() a:_replace(wick.ones(3)) end, "gradient")
    assert_error_has(function() a:_replace(wick.ones(2, { device = "meta" })) end, "gradient")
    assert.are.same({ 2 }, a:size())
    assert.are.equal("cpu", a.device.type)
    assert_error_has(function() a:_replace(5) end, "tensor")
  end)
end)

describe("forward hooks and the rest of PyTorch's Module methods", function()
  local nn = wick.nn
  it("register_forward_hook and register_forward_pre_hook see and may replace inputs and outputs", function()
    local m = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    wick.no_grad(function() -- positive activations: without the hooks the output is not the bias
      m[1].weight:fill_(1)
      m[3].weight:fill_(1)
    end)
    local feats = {}
    local h = m[1]:register_forward_hook(function(mod, args, out)
      assert.are.equal(m[1], mod)
      assert.are.same({ 4, 2 }, args[1]:size())
      feats[#feats + 1] = out:clone()
    end)
    local hp = m[3]:register_forward_pre_hook(function(_, args) return args[1] * 0 end)
    local hd = m[2]:register_forward_hook(function(_, _, out) return out + 1 end)
    local y = m(wick.ones(4, 2))
    assert.are.equal(1, #feats)
    assert.are.same({ 4, 3 }, feats[1]:size())
    assert.is_true(y:equal(m[3].bias:expand(4, 1))) -- the pre hook zeroed the last layer's input
    h:remove()
    hp:remove()
    hd:remove()
    hd:remove() -- twice does nothing
    local z = m(wick.ones(4, 2))
    assert.are.equal(1, #feats)
    assert.is_false(z:equal(y))
    assert.are.same({ "1.bias", "1.weight", "3.bias", "3.weight" }, (function()
      local keys = {}
      for k in pairs(m:state_dict()) do keys[#keys + 1] = k end
      table.sort(keys)
      return keys
    end)())
    -- several results come as an array
    local lstm, seen = nn.LSTM(2, 3), nil
    lstm:register_forward_hook(function(_, _, out) seen = out end)
    local out = lstm(wick.ones(5, 1, 2))
    assert.are.equal(2, #seen)
    assert.is_true(seen[1]:equal(out))
    assert.has_error(function() m:register_forward_hook(5) end)
  end)

  it("get_parameter, half, bfloat16, share_memory", function()
    local m = nn.Sequential(nn.Linear(2, 3))
    assert.are.equal(m[1].weight, m:get_parameter("1.weight"))
    assert.has_error(function() m:get_parameter("2.weight") end, "get_parameter: Sequential has no parameter '2.weight'")
    assert.are.equal(m, m:share_memory())
    assert.are.equal("float16", m:half()[1].weight.dtype)
    assert.are.equal("bfloat16", m:bfloat16()[1].bias.dtype)
  end)
end)

describe("PyTorch's printing of load_state_dict's result, and no_grad as a decorator", function()
  it("prints <All keys matched successfully> or the keys", function()
    local m = wick.nn.Linear(2, 2)
    local r = m:load_state_dict(m:state_dict())
    assert.are.equal("<All keys matched successfully>", tostring(r))
    assert.are.same({}, r.missing_keys)
    local sd = m:state_dict()
    sd.bias, sd.extra = nil, wick.ones(1)
    assert.are.equal("_IncompatibleKeys(missing_keys=['bias'], unexpected_keys=['extra'])",
      tostring(m:load_state_dict(sd, { strict = false })))
  end)

  it("wick.no_grad() wraps a function (PyTorch's @torch.no_grad())", function()
    local x = wick.ones(2):requires_grad_()
    local f = wick.no_grad()(function(a) return a * 2, "kept" end)
    local y, k = f(x)
    assert.is_false(y.requires_grad)
    assert.are.equal("kept", k)
    assert.is_true((x * 2).requires_grad)
    assert.is_true(wick.enable_grad()(function() return (x * 2).requires_grad end)())
    assert.has_error(function() wick.no_grad()(5) end, "no_grad(): expected a function for argument 'fn', got 5")
  end)

  it("a generator under inference_mode (nanochat's generate): the mode holds between yields only inside it", function()
    local x = wick.ones(2):requires_grad_()
    local inside = {}
    local gen = coroutine.wrap(function()
      wick.inference_mode(function()
        for i = 1, 5 do
          inside[#inside + 1] = (x * 2).requires_grad
          coroutine.yield(i)
        end
      end)
    end)
    for i in gen do
      assert.is_true(wick.is_grad_enabled()) -- the consumer records
      if i == 2 then break end -- stopped early: nothing left switched off
    end
    assert.are.same({ false, false }, inside)
    assert.is_true((x * 2).requires_grad)
    -- values pass both ways through the yield; errors end at the resume
    local co = coroutine.wrap(function(a)
      return wick.no_grad(function(v) local w = coroutine.yield(v + 1) return w * 2, wick.is_grad_enabled() end, a)
    end)
    assert.are.equal(2, co(1))
    local doubled, on = co(10)
    assert.are.equal(20, doubled)
    assert.is_false(on)
    local ok, err = coroutine.resume(coroutine.create(function() wick.no_grad(function() error("inner") end) end))
    assert.is_false(ok)
    assert.is_truthy(err:find("inner", 1, true))
    assert.is_true(wick.is_grad_enabled())
    local g = coroutine.wrap(function()
      wick.autocast({ device_type = "cpu" }, function() coroutine.yield(wick.is_autocast_enabled("cpu")) end)
    end)
    assert.is_true(g())
    assert.is_false(wick.is_autocast_enabled("cpu"))
  end)
end)

describe("what a module's state is", function()
  it("leaves out plain tensor attributes, results of ops and non-parameter tensors inside plain tables, as PyTorch does", function()
    local M = nn.Module:extend("Tagger")
    function M:init()
      self.lstm = nn.LSTM(3, 2)
      self.hidden = { wick.zeros(1, 1, 2), wick.zeros(1, 1, 2) } -- the Bi-LSTM CRF tutorial's (h, c)
      self.scale = wick.ones(1) -- assigned in init: a buffer moved by to(), but not state, as PyTorch's is not
      self:register_buffer("mask", wick.ones(2))
    end
    function M:forward(x)
      local out
      out, self.hidden = self.lstm(x, self.hidden)
      self.attn = out:softmax(3) -- an activation kept for later (the annotated transformer's self.attn)
      return out
    end
    local m = M()
    local function keys()
      local k = {}
      for name in pairs(m:state_dict()) do k[#k + 1] = name end
      table.sort(k)
      return k
    end
    local want = { "lstm.bias_hh_l0", "lstm.bias_ih_l0", "lstm.weight_hh_l0", "lstm.weight_ih_l0", "mask" }
    assert.are.same(want, keys())
    m(wick.randn(4, 1, 3))
    assert.are.equal(4, #m:parameters()) -- not hidden's nor attn (they require grad, but are not leaves)
    assert.are.same(want, keys())
    assert.are.equal(2, #m:buffers())
    m.orderings = { [0] = wick.randperm(3), [-1] = wick.zeros(2) } -- MADE's: keys with no name, not state
    assert.are.equal(4, #m:parameters())
    assert.are.same(want, keys())
    -- a fresh model loads the state dict strictly, and PyTorch's, which lacks
    -- the unregistered "scale" (seq2seq's self.scale = torch.sqrt(...)), too
    assert.has_no_error(function() M():load_state_dict(m:state_dict()) end)
    local sd = m:state_dict()
    sd.scale = nil
    assert.are.equal("<All keys matched successfully>", tostring(M():load_state_dict(sd)))
    sd.mask = nil
    support.assert_error_has(function() M():load_state_dict(sd) end, 'Missing key(s) in state_dict: "mask"')
    -- a tensor that requires grad when assigned is a parameter, and stays one when frozen
    m.w = wick.zeros(2, { requires_grad = true })
    m.w:requires_grad_(false)
    assert.are.equal(5, #m:parameters())
    -- one made to require grad after its assignment is not (PyTorch decides at assignment too)
    m.v = wick.zeros(2)
    m.v:requires_grad_(true)
    assert.are.equal(5, #m:parameters())
  end)

  it("keeps parameters inside plain tables, and nn.Parameter makes a leaf of an op's result", function()
    local M = nn.Module:extend("Holder")
    function M:init()
      self.ws = { nn.Parameter(wick.randn(2, { requires_grad = true }) * 0.01), nn.Parameter(wick.zeros(3)) }
    end
    local m = M()
    local ps = m:parameters()
    assert.are.equal(2, #ps)
    assert.is_true(ps[1].is_leaf)
    assert.is_true(ps[1].requires_grad)
  end)
end)

describe("frozen parameters", function()
  it("stay parameters (fine-tuning counts and unfreezes them), get no gradient, and the optimizer skips them", function()
    local m = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    for _, p in ipairs(m:parameters()) do p.requires_grad = false end
    assert.are.equal(4, #m:parameters())
    assert.are.equal(0, #m:buffers())
    m[3] = nn.Linear(4, 2) -- the new head (transfer learning)
    local opt = wick.optim.SGD(m:parameters(), { lr = 0.1 })
    local w1 = m[1].weight:clone()
    m(wick.randn(5, 3)):sum():backward()
    opt:step()
    assert.is_true(m[1].weight:equal(w1))
    assert.is_nil(m[1].weight.grad)
    assert.is_truthy(m[3].weight.grad)
    local n = 0
    for name in pairs(m:state_dict()) do n = n + 1; assert.is_truthy(name) end
    assert.are.equal(4, n)
    -- a tensor that never required grad stays a buffer
    local B = nn.Module:extend("B")
    function B:init() self.scale = wick.ones(2) end
    assert.are.equal(0, #B():parameters())
  end)
end)


describe("a module both in a plain table and in a field", function()
  it("is named once, by its field (MorvanZhou's self.fcs list beside setattr(self, 'fc%i' % i, fc))", function()
    local Net = nn.Module:extend("Listed")
    function Net:init()
      self.fcs = {}
      for i = 0, 2 do
        local fc = nn.Linear(2, 2)
        self["fc" .. i] = fc
        self.fcs[#self.fcs + 1] = fc
      end
      self.layers = { nn.ReLU(), nn.Linear(2, 1) } -- only in the table: named there
    end
    local keys = {}
    for k in pairs(Net():state_dict()) do keys[#keys + 1] = k end
    table.sort(keys)
    assert.are.same({ "fc0.bias", "fc0.weight", "fc1.bias", "fc1.weight", "fc2.bias", "fc2.weight", "layers.2.bias",
      "layers.2.weight" }, keys)
  end)
end)

describe("module backward hooks", function()
  it("register_full_backward_hook sees grad_input and grad_output and may replace grad_input; pre hooks grad_output", function()
    local lin = nn.Linear(3, 2):double()
    local x = wick.randn(4, 3, { dtype = "float64", requires_grad = true })
    local seen = {}
    local h = lin:register_full_backward_hook(function(m, gi, go)
      seen.m, seen.gi, seen.go = m, gi[1], go[1]
      return { gi[1] * 2 }
    end)
    local hp = lin:register_full_backward_pre_hook(function(_, go) seen.pre = go[1]; return { go[1] * 3 } end)
    lin(x):sum():backward()
    assert.is_true(rawequal(lin, seen.m))
    assert.are.same(wick.ones(4, 2, { dtype = "float64" }):tolist(), seen.pre:tolist())
    assert.is_true((seen.go - 3):abs():max():item() == 0) -- the pre hook's replacement
    local expected = (wick.ones(4, 2, { dtype = "float64" }) * 3):mm(lin.weight:detach()) -- grad_input = go W
    assert.is_true((seen.gi - expected):abs():max():item() < 1e-12)
    assert.is_true((x.grad - expected * 2):abs():max():item() < 1e-12) -- the hook's replacement reached x
    h:remove()
    hp:remove()
    x.grad = nil
    lin(x):sum():backward()
    assert.is_true((x.grad - wick.ones(4, 2, { dtype = "float64" }):mm(lin.weight:detach())):abs():max():item() < 1e-12)
    assert.is_function(lin.register_backward_hook)
  end)

  it("a full backward hook gets the gradient of the output the forward hooks made (PyTorch's order)", function()
    local m = nn.Linear(2, 2)
    local go
    m:register_forward_hook(function(_, _, out) return out * 0.5 end)
    m:register_full_backward_hook(function(_, _, g) go = g[1] end)
    m(wick.ones(1, 2)):sum():backward()
    assert.are.same({ { 1, 1 } }, go:tolist()) -- d sum / d (0.5 y), not d sum / d y = 0.5
    assert.is_true((m.weight.grad - 0.5):abs():max():item() == 0)
  end)
end)

describe("a method under one of wick's internal names", function()
  it("is an error where it is defined, not a method silently hidden", function()
    local N = nn.Module:extend("Flow")
    assert_error_has(function() function N:_buffers() return 1 end end, "'_buffers' is a name wick's modules use")
    assert_error_has(function() function N:_modules() return 1 end end, "'_modules' is a name wick's modules use")
    function N:params() return 2 end -- another name is fine
    assert.are.equal(2, N():params())
  end)
end)

describe("load_state_dict of a partial PyTorch checkpoint", function()
  it("renames PyTorch's 0-based indices when they fit better, also with strict = false", function()
    local function model()
      local m = nn.Module:extend("Net")
      function m:init()
        self.blocks = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2), nn.Linear(2, 2))
        self.head = nn.Linear(2, 3)
      end
      function m:forward(x) return self.head(self.blocks(x)) end
      return m()
    end
    local src, dst = model(), model()
    local sd = nn.utils.to_pytorch_names(src:state_dict())
    sd["head.weight"], sd["head.bias"] = nil, nil
    local r = dst:load_state_dict(sd, { strict = false })
    assert.are.same({ "head.weight", "head.bias" }, r.missing_keys)
    assert.are.same({}, r.unexpected_keys)
    for i = 1, 3 do assert.are.same(src.blocks[i].weight:totable(), dst.blocks[i].weight:totable()) end
    -- wick's own names still load as they are
    local own = src:state_dict()
    own["head.weight"], own["head.bias"] = nil, nil
    local other = model()
    other:load_state_dict(own, { strict = false })
    for i = 1, 3 do assert.are.same(src.blocks[i].bias:totable(), other.blocks[i].bias:totable()) end
  end)
end)

describe("containers addressed by their children's names", function()
  it("replace the child a name from named_children names, and take list[-1] = m", function()
    local model = nn.Sequential(nn.Linear(2, 4), nn.ReLU(), nn.Linear(4, 1))
    for name, child in model:named_children() do
      if wick.isinstance(child, nn.ReLU) then model[name] = nn.GELU() end
    end
    assert.are.equal(3, #model)
    assert.is_true(wick.isinstance(model[2], nn.GELU))
    assert.is_true(rawequal(model[2], model["2"]))
    model[-1] = nn.Linear(4, 7)
    assert.are.equal(3, #model)
    assert.are.equal(7, model[3].out_features)
    -- add_module's integer names stay PyTorch's indices (a slice of VGG's features from 4 on)
    local s = nn.Sequential()
    for x = 4, 6 do s:add_module(tostring(x), nn.ReLU()) end
    local names = {}
    for k in s:named_children() do names[#names + 1] = k end
    assert.are.same({ "5", "6", "7" }, names)
  end)
end)

describe("train and eval through a child's own train()", function()
  it("calls each child's train(mode), as PyTorch's (loralib merges on eval)", function()
    local M = nn.Linear:extend("Merging")
    function M:train(mode)
      if mode == nil then mode = true end
      nn.Linear.train(self, mode)
      self.merged = not mode
      return self
    end
    local s = nn.Sequential(M(2, 2), nn.ReLU())
    s:eval()
    assert.is_true(s[1].merged)
    assert.is_false(s[2].training)
    s:train()
    assert.is_false(s[1].merged)
    assert.is_true(s[2].training)
  end)
end)

describe("what the seventh round of ports wrote", function()
  it("m:to(tensor), frozen parameters through register_parameter, F.embedding's padding_idx, wick.cuda's seeds", function()
    local m = nn.Linear(2, 2)
    m:to(wick.zeros(1, { dtype = "float64" }))
    assert.are.equal("float64", m.weight.dtype)
    local h = nn.Module:extend("Holder")
    function h:init() self:register_parameter("u", nn.Parameter(wick.ones(3), false)) end
    local held = h()
    assert.is_false(held.u.requires_grad)
    assert.are.equal(1, #held:parameters())
    local w = wick.ones(4, 2):requires_grad_(true)
    nn.functional.embedding(wick.tensor({ 1, 2, 1 }, { dtype = "int64" }), w, 1):sum():backward()
    assert.are.same({ { 0, 0 }, { 1, 1 }, { 0, 0 }, { 0, 0 } }, w.grad:totable())
    -- max_norm (positional after padding_idx) renormalises the rows looked up, in place
    nn.functional.embedding(wick.tensor({ 1 }, { dtype = "int64" }), w, nil, 1.0)
    assert.is_true(math.abs(w[1]:norm():item() - 1) < 1e-6)
    assert.are.same({ 1, 1 }, w[2]:totable())
    wick.cuda.manual_seed_all(7)
    local a = wick.rand(3)
    wick.manual_seed(7)
    assert.are.same(a:totable(), wick.rand(3):totable())
  end)
end)

describe("a Sequential built from PyTorch's OrderedDict with a '-1' name (CLIP's downsample)", function()
  it("keeps '-1' as a plain name and its integer names as PyTorch's indices", function()
    local s = nn.Sequential()
    s:add_module("-1", nn.AvgPool2d(2))
    s:add_module("0", nn.Conv2d(4, 8, 1, { bias = false }))
    s:add_module("1", nn.BatchNorm2d(8))
    local names = {}
    for k in s:named_children() do names[#names + 1] = k end
    assert.are.same({ "-1", "1", "2" }, names)
    assert.is_truthy(s:state_dict()["1.weight"])
    assert.are.same({ 1, 8, 2, 2 }, s(wick.randn(1, 4, 4, 4)):size())
  end)
end)

describe("PyTorch's private dicts m._modules, m._parameters, m._buffers", function()
  local Net = nn.Module:extend("PrivNet")
  function Net:init()
    self.conv = nn.Conv2d(1, 2, 3)
    self.relu = nn.ReLU()
    self.fc = nn.Linear(4, 2)
    self.scale = nn.Parameter(wick.ones(1))
    self:register_buffer("rm", wick.zeros(2))
  end

  it("list the module's own members in order, as items(), keys(), values() and by name", function()
    local n = Net()
    local names, mods = {}, {}
    for name, m in n._modules:items() do names[#names + 1] = name; mods[#mods + 1] = m end
    assert.are.same({ "conv", "relu", "fc" }, names)
    assert.are.equal(n.fc, mods[3])
    assert.are.equal(3, #n._modules)
    local pnames = {}
    for k in n._parameters:keys() do pnames[#pnames + 1] = k end
    assert.are.same({ "scale" }, pnames) -- the own ones only, as PyTorch's
    assert.are.equal(n.scale, n._parameters.scale)
    assert.are.equal(n.rm, n._buffers.rm)
    for v in n._buffers:values() do assert.are.equal(n.rm, v) end
    assert.is_nil(n._modules.scale) -- a parameter is not a module
    assert.are.equal("dflt", n._modules:get("missing", "dflt"))
    local l = nn.Linear(2, 3)
    assert.are.same({ 3, 2 }, { l._parameters.weight:size(1), l._parameters.weight:size(2) })
    local bn, bnames = nn.BatchNorm1d(3), {}
    for k in bn._buffers:keys() do bnames[#bnames + 1] = k end
    assert.are.same({ "running_mean", "running_var", "num_batches_tracked" }, bnames)
  end)

  it("write through: replacing a child, adding a buffer, deleting with nil (del m._parameters[name])", function()
    local n = Net()
    -- the layer-swapping loop of many PyTorch scripts
    for name, m in n._modules:items() do
      if getmetatable(m).__name == "ReLU" then n._modules[name] = nn.GELU() end
    end
    assert.are.equal("GELU", getmetatable(n.relu).__name)
    n._modules.fc = nil
    assert.is_nil(n.fc)
    assert.are.equal(2, #n._modules)
    n._parameters.scale = nil
    assert.are.equal(2, #n:parameters()) -- conv's weight and bias
    assert.is_nil(n:state_dict().scale)
    n._buffers.extra = wick.ones(3)
    assert.is_not_nil(n:state_dict().extra)
    local s = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
    s._modules["2"] = nn.Tanh()
    assert.are.equal("Tanh", getmetatable(s[2]).__name)
  end)

  it("refuse what PyTorch's would break on, clearly", function()
    local n = Net()
    assert_error_has(function() n._modules = {} end, "'_modules' is PyTorch's dict")
    -- (PyTorch's _parameters is a plain dict: any tensor goes in and parameters() gives it)
    local before = #n:parameters()
    n._parameters.x = wick.ones(2)
    assert.are.equal(before + 1, #n:parameters())
    assert_error_has(function() n._modules.x = 3 end, "Module._modules")
    if jit then -- LuaJIT: a userdata, so pairs() is an error rather than an empty loop
      assert_error_has(function() for _ in pairs(n._modules) do end end, "table expected")
    else -- Lua 5.4: __pairs, in order
      local names = {}
      for k in pairs(n._modules) do names[#names + 1] = k end
      assert.are.same({ "conv", "relu", "fc" }, names)
    end
  end)
end)

describe("parameters(recurse), named_parameters(prefix, recurse, remove_duplicate)", function()
  it("take PyTorch's arguments, by position or as options", function()
    local l = nn.Linear(2, 2)
    local s = nn.Sequential(l, nn.ReLU(), l)
    assert.are.equal(0, #s:parameters(false))
    assert.are.equal(2, #s:parameters())
    assert.are.equal(2, #l:parameters({ recurse = false }))
    local names = {}
    for name in s:named_parameters("model") do names[#names + 1] = name end
    assert.are.same({ "model.1.weight", "model.1.bias" }, names)
    names = {}
    for name in s:named_parameters({ remove_duplicate = false }) do names[#names + 1] = name end
    assert.are.same({ "1.weight", "1.bias", "3.weight", "3.bias" }, names)
    local bn = nn.Sequential(nn.BatchNorm1d(2))
    assert.are.equal(0, #bn:buffers(false))
    assert.are.equal(3, #bn:buffers())
    assert_error_has(function() s:parameters(3) end, "recurse")
  end)
end)

describe("state dict hooks", function()
  -- gpt-fast's Attention: a checkpoint's wq/wk/wv merged into wqkv on load
  local Attn = nn.Module:extend("HookAttn")
  function Attn:init()
    self.wqkv = nn.Linear(4, 12, { bias = false })
    self:_register_load_state_dict_pre_hook(function(...) return self:load_hook(...) end)
  end
  function Attn:load_hook(state_dict, prefix)
    if state_dict[prefix .. "wq.weight"] then
      local parts = {}
      for i, n in ipairs({ "wq", "wk", "wv" }) do
        parts[i] = state_dict[prefix .. n .. ".weight"]
        state_dict[prefix .. n .. ".weight"] = nil
      end
      state_dict[prefix .. "wqkv.weight"] = wick.cat(parts)
    end
  end
  local Model = nn.Module:extend("HookModel")
  function Model:init() self.layers = nn.ModuleList({ Attn(), Attn() }); self.norm = nn.LayerNorm(4) end

  it("a load pre hook rewrites the (copied) state dict with its module's prefix, PyTorch's 0-based names too", function()
    local m = Model()
    local sd = { ["norm.weight"] = wick.randn(4), ["norm.bias"] = wick.randn(4) }
    for i = 0, 1 do
      for _, n in ipairs({ "wq", "wk", "wv" }) do sd[("layers.%d.%s.weight"):format(i, n)] = wick.randn(4, 4) end
    end
    assert.are.equal("<All keys matched successfully>", tostring(m:load_state_dict(sd)))
    assert.is_true(wick.equal(m.layers[2].wqkv.weight[{ { 5, 8 } }], sd["layers.1.wk.weight"]))
    assert.is_not_nil(sd["layers.0.wq.weight"]) -- the caller's table is left as it was
  end)

  it("a post hook sees the incompatible keys before strict's check and may clear them", function()
    local m = Model()
    assert_error_has(function() m:load_state_dict({}) end, "Missing key(s)")
    local seen
    local h = m:register_load_state_dict_post_hook(function(mod, keys)
      seen = #keys.missing_keys
      for i = #keys.missing_keys, 1, -1 do keys.missing_keys[i] = nil end
    end)
    assert.are.equal("<All keys matched successfully>", tostring(m:load_state_dict({})))
    assert.are.equal(4, seen)
    h:remove()
    assert_error_has(function() m:load_state_dict({}) end, "Missing key(s)")
  end)

  it("state_dict post hooks, prefix and keep_vars", function()
    local l = nn.Linear(2, 2)
    l:register_state_dict_post_hook(function(_, sd, prefix) sd[prefix .. "version"] = wick.tensor(2) end)
    local s = nn.Sequential(l)
    assert.are.equal(2, s:state_dict()["1.version"]:item())
    assert.is_not_nil(s:state_dict({ prefix = "net." })["net.1.weight"])
    assert.is_true(s:state_dict({ keep_vars = true })["1.weight"].requires_grad)
    assert.is_false(s:state_dict()["1.weight"].requires_grad)
  end)

  it("load_state_dict(sd, {assign = true}) takes the checkpoint's tensors (a meta model without it stays meta)", function()
    local m = nn.Linear(2, 2, { device = "meta" })
    local src = nn.Linear(2, 2, { dtype = "float64" })
    m:load_state_dict(src:state_dict()) -- PyTorch's no-op, with its warning
    assert.is_true(m.weight.is_meta)
    local w = m.weight
    m:load_state_dict(src:state_dict(), { assign = true })
    assert.are.equal(w, m.weight) -- the same parameter object, now holding the checkpoint's data
    assert.are.equal("float64", m.weight.dtype)
    assert.is_true(m.weight.requires_grad)
    local x = wick.ones(1, 2, { dtype = "float64" })
    assert.is_true(wick.equal(m(x), src(x)))
  end)
end)

describe("load_state_dict of a state dict without num_batches_tracked", function()
  it("keeps the batch norm's count, as PyTorch's (torchvision's old DenseNet checkpoints)", function()
    local m = nn.Sequential(nn.Conv2d(3, 4, 1), nn.BatchNorm2d(4))
    m[2].num_batches_tracked:fill_(7)
    local sd = {}
    for k, v in pairs(m:state_dict()) do if not k:find("num_batches_tracked") then sd[k] = v end end
    assert.are.equal("<All keys matched successfully>", tostring(m:load_state_dict(sd)))
    assert.are.equal(7, m[2].num_batches_tracked:item())
    sd["2.running_mean"] = nil
    assert_error_has(function() m:load_state_dict(sd) end, 'Missing key(s) in state_dict: "2.running_mean"')
  end)
end)
