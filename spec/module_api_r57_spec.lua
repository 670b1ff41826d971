-- nn.Module against PyTorch 2.15 (values from torch, float64): hooks run over a copy of their
-- lists, Module.__setattr__'s rules, add_module over another kind, the _extra_state's place, None
-- entries, backward hooks on modules of several outputs, Module.type, handle ids, the module-global
-- hooks, get_submodule/get_parameter/get_buffer's errors, a second init.
local wick = require("wick")
local nn = wick.nn
local support = require("spec.support")
local F64 = "float64"

local function names(it)
  local out = {}
  for k in it do out[#out + 1] = k end
  return table.concat(out, ",")
end
local function keys(list) return table.concat(list, ",") end

local B = nn.Module:extend("R57B")
function B:init()
  self.fc = nn.Linear(2, 2, { dtype = F64 })
  self:register_buffer("rm", wick.zeros(2, { dtype = F64 }))
end

describe("hooks run over a copy of their list (PyTorch 2.15)", function()
  it("a forward hook that removes itself does not stop the next one", function()
    local lin, log, h = nn.Linear(2, 2), {}, nil
    h = lin:register_forward_hook(function() log[#log + 1] = "A"; h.remove() end)
    lin:register_forward_hook(function() log[#log + 1] = "B" end)
    lin(wick.ones(1, 2)); lin(wick.ones(1, 2))
    assert.are.equal("A,B,B", table.concat(log, ","))
    local lin2, log2, h2 = nn.Linear(2, 2), {}, nil
    h2 = lin2:register_forward_pre_hook(function() log2[#log2 + 1] = "A"; h2:remove() end)
    lin2:register_forward_pre_hook(function() log2[#log2 + 1] = "B" end)
    lin2(wick.ones(1, 2)); lin2(wick.ones(1, 2))
    assert.are.equal("A,B,B", table.concat(log2, ","))
  end)

  it("a full backward hook that removes itself does not stop the next one", function()
    local lin, log, h = nn.Linear(2, 2), {}, nil
    h = lin:register_full_backward_hook(function() log[#log + 1] = "A"; h.remove() end)
    lin:register_full_backward_hook(function() log[#log + 1] = "B" end)
    lin(wick.ones(1, 2, { requires_grad = true })):sum():backward()
    lin(wick.ones(1, 2, { requires_grad = true })):sum():backward()
    assert.are.equal("A,B,B", table.concat(log, ","))
  end)

  it("a hook registered inside a hook runs from the next call", function()
    local lin, log = nn.Linear(2, 2), {}
    lin:register_forward_pre_hook(function(m)
      log[#log + 1] = "P"
      if #log == 1 then m:register_forward_pre_hook(function() log[#log + 1] = "new" end) end
    end)
    lin(wick.ones(1, 2)); lin(wick.ones(1, 2))
    assert.are.equal("P,P,new", table.concat(log, ","))
  end)

  it("handles have PyTorch's integer id, unique, the key in m._forward_hooks; remove twice is fine", function()
    local lin, f = nn.Linear(2, 2), function() end
    local h1, h2 = lin:register_forward_hook(f), lin:register_forward_pre_hook(f)
    assert.are.equal("number", type(h1.id))
    assert.are.equal(math.floor(h1.id), h1.id)
    assert.are_not.equal(h1.id, h2.id)
    assert.are.equal(h1.id, lin._forward_hooks:keys()[1])
    h1:remove(); h1:remove()
    assert.are.equal(0, lin._forward_hooks:len())
  end)
end)

describe("attribute assignment follows Module.__setattr__", function()
  it("an nn.Parameter over a child module or a buffer becomes a parameter", function()
    local b = B()
    b.fc = nn.Parameter(wick.ones(2, { dtype = F64 }))
    assert.are.equal("fc", names(b:named_parameters()))
    assert.are.equal("fc,rm", keys(b:state_dict():keys()))
    assert.are.equal("", names(b:named_children()))
    b = B()
    b.rm = nn.Parameter(wick.ones(2, { dtype = F64 }))
    assert.are.equal("rm,fc.weight,fc.bias", names(b:named_parameters()))
    assert.are.equal("", names(b:named_buffers()))
    assert.are.equal("rm,fc.weight,fc.bias", keys(b:state_dict():keys()))
    local C = nn.Module:extend("R57C")
    function C:init() self.fc = nn.Linear(2, 2); self.fc = nn.Parameter(wick.ones(2)) end
    assert.are.equal("fc", names(C():named_parameters()))
  end)

  it("a module over a buffer is a child", function()
    local b = B()
    b.rm = nn.Tanh()
    assert.are.equal("", names(b:named_buffers()))
    assert.are.equal("fc,rm", names(b:named_children()))
  end)

  it("gives PyTorch's TypeError for a value of the wrong kind", function()
    support.assert_error_has(function() local b = B(); b.fc = wick.ones(2, { dtype = F64 }); b:parameters() end,
      "cannot assign 'torch.DoubleTensor' (a float64 tensor) as child module 'fc' (nn.Module or None expected)")
    support.assert_error_has(function() local b = B(); b.fc = 5; b:state_dict() end,
      "cannot assign 'int' as child module 'fc' (nn.Module or None expected)")
    support.assert_error_has(function() local b = B(); b.rm = 5; b:buffers() end,
      "cannot assign 'int' as buffer 'rm' (nn.Buffer, Tensor or None expected)")
    support.assert_error_has(function() local l = nn.Linear(2, 2); l.bias = nn.Tanh(); l:parameters() end,
      "cannot assign 'Tanh' as parameter 'bias' (nn.Parameter or None expected)")
    support.assert_error_has(function() local l = nn.Linear(2, 2); l.bias = 2.5; l:parameters() end,
      "cannot assign 'float' as parameter 'bias' (nn.Parameter or None expected)")
  end)

  it("keeps a plain tensor over a parameter as that parameter (torch.func.functional_call's swap)", function()
    local l = nn.Linear(2, 2)
    l.weight = wick.ones(2, 2)
    assert.are.equal("weight,bias", names(l:named_parameters()))
  end)

  it("nil (None) keeps the entry in the dicts, not in named_parameters; del removes it", function()
    local l = nn.Linear(2, 2, { dtype = F64 })
    l.bias = nil
    assert.are.equal("weight,bias", keys(l._parameters:keys()))
    assert.are.equal("weight", names(l:named_parameters()))
    local b = B()
    b.fc = nil
    assert.are.equal("fc", keys(b._modules:keys()))
    assert.are.equal("", names(b:named_children()))
    b = B()
    b:__delattr__("fc")
    assert.are.equal("", keys(b._modules:keys()))
  end)

  it("register_parameter, register_buffer and add_module of nil are None entries, in order", function()
    local N = nn.Module:extend("R57N")
    function N:init()
      self:register_parameter("p", nil)
      self.w = nn.Parameter(wick.ones(1, { dtype = F64 }))
      self:register_buffer("b", nil)
      self:add_module("c", nil)
      self.d = nn.Tanh()
    end
    local n = N()
    assert.are.equal("p,w", keys(n._parameters:keys()))
    assert.are.equal("b", keys(n._buffers:keys()))
    assert.are.equal("c,d", keys(n._modules:keys()))
    assert.are.equal(2, #n._parameters)
    assert.are.equal("w", names(n:named_parameters()))
    assert.are.equal("w", keys(n:state_dict():keys()))
  end)

  it("add_module over a buffer or a parameter is PyTorch's KeyError", function()
    support.assert_error_has(function() B():add_module("rm", nn.Tanh()) end, "attribute 'rm' already exists")
    support.assert_error_has(function() nn.Linear(2, 2):add_module("weight", nn.Tanh()) end,
      "attribute 'weight' already exists")
    local b = B()
    b:add_module("fc", nn.Tanh()) -- (a child replaced)
    assert.are.equal("Tanh", getmetatable(b.fc).__name)
  end)
end)

describe("get_submodule, get_parameter, get_buffer, set_submodule", function()
  it("say PyTorch's error for a member of another kind", function()
    support.assert_error_has(function() B():get_submodule("rm") end, "`rm` is not an nn.Module")
    local Outer = nn.Module:extend("R57Outer")
    function Outer:init() self.a = B() end
    support.assert_error_has(function() Outer():get_submodule("a.rm") end, "`rm` is not an nn.Module")
    support.assert_error_has(function() Outer():get_parameter("a.rm") end, "`rm` is not an nn.Parameter")
    support.assert_error_has(function() Outer():get_buffer("a.fc.weight") end, "`weight` is not a buffer")
    support.assert_error_has(function() Outer():set_submodule("a.rm", nn.Tanh()) end, "`rm` is not an nn.Module")
    support.assert_error_has(function() Outer():set_submodule("a.rm", nn.Tanh(), true) end, "`rm` is not an nn.Module")
  end)
end)

describe("state_dict's _extra_state", function()
  it("comes after the module's own tensors and before its children's, as PyTorch's", function()
    local X = nn.Module:extend("R57X")
    function X:init() self.lin = nn.Linear(1, 1); self.s = nn.Parameter(wick.ones(1)) end
    function X:get_extra_state() return 1 end
    function X:set_extra_state() end
    local O = nn.Module:extend("R57O")
    function O:init() self.inner = X(); self.head = nn.Linear(1, 1) end
    assert.are.equal("inner.s,inner._extra_state,inner.lin.weight,inner.lin.bias,head.weight,head.bias",
      keys(O():state_dict():keys()))
    local o = O()
    local sd = o:state_dict()
    o:load_state_dict(sd)
  end)
end)

describe("backward hooks", function()
  local M = nn.Module:extend("R57Multi")
  function M:init() self.l = nn.Linear(2, 2, { dtype = F64 }) end
  function M:forward(x)
    local y = self.l(x)
    return y, (y * y):sum()
  end
  local function model()
    local m = M()
    wick.no_grad(function()
      m.l.weight:copy_(wick.tensor({ { 1, 2 }, { 3, -1 } }, { dtype = F64 }))
      m.l.bias:copy_(wick.tensor({ 0.5, -0.5 }, { dtype = F64 }))
    end)
    return m
  end

  it("a full backward hook on a module of several outputs gets one grad_output per output", function()
    local m, log = model(), {}
    m:register_full_backward_hook(function(_, gi, go)
      log[#log + 1] = "hook"
      assert.are.equal(1, gi.n)
      assert.are.equal(2, go.n)
      assert.are.same({ { 6, 6 }, { 6, 6 } }, go[1]:tolist())
      assert.are.equal(1, go[2]:item())
      assert.are.same({ { 38, 27 }, { 34, -2 } }, gi[1]:tolist())
    end)
    m:register_full_backward_pre_hook(function(_, go)
      log[#log + 1] = "pre" .. go.n
      return { go[1] * 2, go[2] }
    end)
    local x = wick.tensor({ { 1, 2 }, { 0.5, -1 } }, { dtype = F64, requires_grad = true })
    local y, aux = m(x)
    ;(y:sum() * 3 + aux):backward()
    assert.are.equal("pre2,hook", table.concat(log, ","))
    -- PyTorch: [[38, 27], [34, -2]]
    assert.are.same({ { 38, 27 }, { 34, -2 } }, x.grad:tolist())
  end)

  it("an output without a gradient is nil in grad_output; an input that needs none is nil in grad_input", function()
    local m, got = model(), nil
    m:register_full_backward_hook(function(_, _, go) got = { go.n, go[1] == nil, go[2] == nil } end)
    local _, aux = m(wick.tensor({ { 1, 2 } }, { dtype = F64, requires_grad = true }))
    aux:backward()
    assert.are.same({ 2, true, false }, got)
    local lin, gin = nn.Linear(2, 2), nil
    lin:register_full_backward_hook(function(_, gi, go) gin = { gi.n, gi[1] == nil, go.n } end)
    lin(wick.ones(1, 2)):sum():backward()
    assert.are.same({ 1, true, 1 }, gin)
  end)

  it("the legacy register_backward_hook on a module of several outputs fires once", function()
    local m, fired = model(), 0
    m:register_backward_hook(function() fired = fired + 1 end)
    local y, aux = m(wick.randn(3, 2, { dtype = F64 }))
    ;(y:sum() + aux):backward()
    assert.are.equal(1, fired)
  end)
end)

describe("module-global hooks", function()
  it("run for every module, before the module's own, and are removable", function()
    local Blk = nn.Module:extend("R57Blk")
    function Blk:init() self.fc = nn.Linear(2, 2) end
    function Blk:forward(x) return self.fc(x) end
    local blk, log = Blk(), {}
    local g1 = nn.Module.register_module_forward_pre_hook(function(m) log[#log + 1] = "gpre:" .. m:_get_name() end)
    local g2 = nn.Module.register_module_forward_hook(function(m) log[#log + 1] = "gfwd:" .. m:_get_name() end)
    blk:register_forward_pre_hook(function() log[#log + 1] = "pre" end)
    blk:register_forward_hook(function() log[#log + 1] = "fwd" end)
    blk(wick.ones(1, 2))
    g1:remove(); g2:remove()
    blk(wick.ones(1, 2))
    assert.are.equal("gpre:R57Blk,pre,gpre:Linear,gfwd:Linear,gfwd:R57Blk,fwd,pre,fwd", table.concat(log, ","))
    local blog = {}
    local g3 = nn.Module.register_module_full_backward_hook(function(m) blog[#blog + 1] = "gbw:" .. m:_get_name() end)
    local g4 = nn.Module.register_module_full_backward_pre_hook(function(m) blog[#blog + 1] = "gbpre:" .. m:_get_name() end)
    blk:register_full_backward_hook(function() blog[#blog + 1] = "bw" end)
    blk(wick.ones(1, 2, { requires_grad = true })):sum():backward()
    g3.remove(); g4.remove()
    assert.are.equal("gbpre:R57Blk,gbpre:Linear,gbw:Linear,gbw:R57Blk,bw", table.concat(blog, ","))
    blog = {}
    blk(wick.ones(1, 2, { requires_grad = true })):sum():backward()
    assert.are.equal("bw", table.concat(blog, ","))
    support.assert_error_has(function() nn.Module.register_module_forward_hook(3) end, "register_module_forward_hook")
  end)
end)

describe("Module:type", function()
  it("casts every parameter and buffer, integer buffers too", function()
    local T = nn.Module:extend("R57T")
    function T:init() self.l = nn.Linear(2, 2, { dtype = F64 }); self:register_buffer("count", wick.tensor(3)) end
    local t = T()
    local w = t.l.weight
    assert.are.equal(t, t:type("float32"))
    local dtypes = {}
    for _, v in ipairs(t:state_dict():values()) do dtypes[#dtypes + 1] = v.dtype end
    assert.are.equal("float32,float32,float32", table.concat(dtypes, ","))
    assert.are.equal(w, t.l.weight)
    t:type("torch.DoubleTensor")
    assert.are.equal("float64", t.count.dtype)
    assert.are.equal(3, t.count:item())
    support.assert_error_has(function() t:type(3) end, "type")
  end)
end)

describe("a class that defines init twice", function()
  it("warns once that the second replaces the constructor", function()
    local K = nn.Module:extend("R57Kmeans")
    function K:init(n) self.n = n end
    function K:init(x) self.x = x end -- luacheck: ignore (the port's mistake under test)
    local warned = {}
    local old = wick._warn
    wick._warn = function(msg) warned[#warned + 1] = msg end
    local ok, err = pcall(function() K(3); K(4) end)
    wick._warn = old
    assert.is_true(ok, err)
    assert.are.equal(1, #warned)
    assert.is_truthy(warned[1]:find("R57Kmeans: init is defined again, replacing the constructor", 1, true))
  end)
end)
