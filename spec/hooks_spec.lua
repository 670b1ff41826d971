-- Autograd hooks: t:register_hook(fn) (fn(grad) once per backward on t's whole
-- gradient, which a returned tensor replaces), t:register_post_accumulate_grad_hook(fn)
-- (fn(t) once per backward, after all of t's gradient of that backward is in
-- t.grad) and wick.autograd.queue_callback(fn) (fn() once the running backward
-- finished).
local wick = require("wick")
local support = require("spec.support")
local assert_error_has = support.assert_error_has
local function assert_close(expected, actual, tol) support.assert_close(actual:totable(), expected:totable(), tol) end

local F64 = { dtype = "float64" }
local function leaf(values) return wick.tensor(values, F64):requires_grad_() end

describe("post-accumulate-grad hooks", function()
  it("fire once per backward for a leaf used several times, with its whole gradient", function()
    local w, x = leaf({ 1, 2, 3 }), wick.tensor({ 4, 5, 6 }, F64)
    local calls, seen = 0, nil
    w:register_post_accumulate_grad_hook(function(t)
      calls = calls + 1
      seen = t.grad:clone()
    end)
    -- w reaches the loss through three edges (two of one node)
    local loss = (w * x):sum() + (w * w):sum() + w:sum()
    loss:backward()
    assert.equal(1, calls)
    assert_close(x + w:detach() * 2 + 1, seen, 0)
    assert_close(seen, w.grad, 0)
  end)

  it("give the hook the tensor object it was registered on", function()
    local w = leaf({ 1, 2 })
    local got
    w:register_post_accumulate_grad_hook(function(t) got = t end)
    ;(w * 3):sum():backward()
    assert.is_true(rawequal(got, w))
  end)

  it("fire as each leaf is done: the last layer's before the first's, hooks of a leaf in registration order", function()
    local a, b, x = leaf({ 1, 2 }), leaf({ 3, 4 }), wick.tensor({ 5, 6 }, F64)
    local order = {}
    a:register_post_accumulate_grad_hook(function() order[#order + 1] = "a1" end)
    b:register_post_accumulate_grad_hook(function() order[#order + 1] = "b1" end)
    a:register_post_accumulate_grad_hook(function() order[#order + 1] = "a2" end)
    local h = (x * a):tanh()
    ;(h * b):sum():backward()
    assert.same({ "b1", "a1", "a2" }, order)
  end)

  it("fire while backward still runs (before the earlier layers' gradients exist)", function()
    local a, b, x = leaf({ 1, 2 }), leaf({ 3, 4 }), wick.tensor({ 5, 6 }, F64)
    local a_grad_when_b_fired = "unset"
    b:register_post_accumulate_grad_hook(function() a_grad_when_b_fired = a.grad end)
    ;((x * a):exp() * b):sum():backward()
    assert.is_nil(a_grad_when_b_fired)
    assert.is_not_nil(a.grad)
  end)

  it("do not fire for leaves that got no gradient", function()
    local a, unused = leaf({ 1, 2 }), leaf({ 3, 4 })
    local fired = {}
    a:register_post_accumulate_grad_hook(function() fired.a = true end)
    unused:register_post_accumulate_grad_hook(function() fired.unused = true end)
    ;(a * 2):sum():backward()
    assert.is_true(fired.a)
    assert.is_nil(fired.unused)
    assert.is_nil(unused.grad)
  end)

  it("fire when the root of backward is the leaf itself", function()
    local w, calls = leaf({ 1, 2 }), 0
    w:register_post_accumulate_grad_hook(function() calls = calls + 1 end)
    w:backward(wick.tensor({ 1, 1 }, F64))
    assert.equal(1, calls)
    assert_close(wick.tensor({ 1, 1 }, F64), w.grad, 0)
  end)

  it("fire once per backward with retain_graph, seeing the accumulated grad", function()
    local w, x = leaf({ 1, 2 }), wick.tensor({ 3, 4 }, F64)
    local grads = {}
    w:register_post_accumulate_grad_hook(function(t) grads[#grads + 1] = t.grad:clone() end)
    local loss = (w * x):sum()
    loss:backward({ retain_graph = true })
    loss:backward()
    assert.equal(2, #grads)
    assert_close(x, grads[1], 0)
    assert_close(x * 2, grads[2], 0)
  end)

  it("stop after handle:remove() (twice is harmless), other hooks stay", function()
    local w = leaf({ 1, 2 })
    local calls = { 0, 0 }
    local h1 = w:register_post_accumulate_grad_hook(function() calls[1] = calls[1] + 1 end)
    w:register_post_accumulate_grad_hook(function() calls[2] = calls[2] + 1 end)
    ;(w * 2):sum():backward()
    h1:remove()
    h1:remove()
    ;(w * 2):sum():backward()
    assert.same({ 1, 2 }, calls)
  end)

  it("may remove themselves while running", function()
    local w, calls, h = leaf({ 1 }), 0, nil
    h = w:register_post_accumulate_grad_hook(function() calls = calls + 1; h:remove() end)
    ;(w * 2):sum():backward()
    ;(w * 2):sum():backward()
    assert.equal(1, calls)
  end)

  it("survive model:to (the parameter object keeps its hooks)", function()
    wick.manual_seed(3)
    local lin = wick.nn.Linear(3, 2)
    local fired = {}
    lin.weight:register_post_accumulate_grad_hook(function(t) fired[#fired + 1] = t end)
    lin:to("float64")
    assert.equal("float64", tostring(lin.weight.dtype))
    lin(wick.randn({ 4, 3 }, F64)):sum():backward()
    assert.equal(1, #fired)
    assert.is_true(rawequal(fired[1], lin.weight))
    assert.equal("float64", tostring(fired[1].grad.dtype))
  end)

  it("a hook's error stops backward and is raised at the user's backward line", function()
    local w = leaf({ 1, 2 })
    local h = w:register_post_accumulate_grad_hook(function() error("boom in hook") end)
    local loss = (w * 2):sum()
    local line = debug.getinfo(1, "l").currentline + 1
    local err = support.error_of(function() loss:backward() end)
    assert.truthy(err:find("hooks_spec.lua:" .. line .. ": backward: a hook raised:", 1, true), err)
    assert.truthy(err:find("boom in hook", 1, true), err)
    h:remove()
    -- the engine is usable again
    local w2 = leaf({ 1, 2 })
    ;(w2 * 3):sum():backward()
    assert_close(wick.tensor({ 3, 3 }, F64), w2.grad, 0)
    -- a non-string error value is raised as it is
    local value = { "a table" }
    w2:register_post_accumulate_grad_hook(function() error(value) end)
    local ok, got = pcall(function() (w2 * 3):sum():backward() end)
    assert.is_false(ok)
    assert.is_true(rawequal(value, got))
  end)

  it("are refused on non-leaves and on tensors that do not require grad", function()
    local w = leaf({ 1, 2 })
    assert_error_has(function() (w * 2):register_post_accumulate_grad_hook(function() end) end, "non-leaf")
    assert_error_has(function() wick.tensor({ 1 }):register_post_accumulate_grad_hook(function() end) end,
      "doesn't require gradient")
    assert_error_has(function() w:register_post_accumulate_grad_hook(42) end, "expected a function for fn")
  end)

  it("let several hooked leaves of a network all fire once per step, over many steps", function()
    wick.manual_seed(1)
    local model = wick.nn.Sequential(wick.nn.Linear(4, 8), wick.nn.ReLU(), wick.nn.Linear(8, 2))
    local counts = {}
    for name, p in model:named_parameters() do
      counts[name] = 0
      p:register_post_accumulate_grad_hook(function() counts[name] = counts[name] + 1 end)
    end
    for _ = 1, 5 do
      model:zero_grad()
      model(wick.randn({ 3, 4 })):pow(2):sum():backward()
    end
    local n = 0
    for name, c in pairs(counts) do
      n = n + 1
      assert.equal(5, c, name)
    end
    assert.equal(4, n)
  end)
end)

describe("wick.autograd.queue_callback", function()
  it("runs queued callbacks once backward finished, in order", function()
    local a, b, x = leaf({ 1, 2 }), leaf({ 3, 4 }), wick.tensor({ 5, 6 }, F64)
    local log = {}
    b:register_post_accumulate_grad_hook(function()
      log[#log + 1] = "b"
      wick.autograd.queue_callback(function()
        log[#log + 1] = "cb1:" .. tostring(a.grad ~= nil)
        wick.autograd.queue_callback(function() log[#log + 1] = "cb2" end)
      end)
    end)
    a:register_post_accumulate_grad_hook(function() log[#log + 1] = "a" end)
    ;((x * a) * b):sum():backward()
    assert.same({ "b", "a", "cb1:true", "cb2" }, log)
    -- a callback is queued for one backward only
    log = {}
    b:register_post_accumulate_grad_hook(function() end)
    ;(a * 2):sum():backward()
    assert.same({ "a" }, log)
  end)

  it("keeps the callbacks of a backward run inside a hook apart from the outer one's", function()
    local w, v, log = leaf({ 1 }), leaf({ 2 }), {}
    v:register_post_accumulate_grad_hook(function()
      wick.autograd.queue_callback(function() log[#log + 1] = "inner done" end)
    end)
    w:register_post_accumulate_grad_hook(function()
      wick.autograd.queue_callback(function() log[#log + 1] = "outer done" end)
      wick.enable_grad(function() (v * 5):sum():backward() end)
      log[#log + 1] = "after inner"
    end)
    ;(w * 3):sum():backward()
    assert.same({ "inner done", "after inner", "outer done" }, log)
    assert_close(wick.tensor({ 5 }, F64), v.grad, 0)
    assert_close(wick.tensor({ 3 }, F64), w.grad, 0)
  end)

  it("refuses to queue outside a backward; a callback's error is raised at the backward line", function()
    assert_error_has(function() wick.autograd.queue_callback(function() end) end, "while a backward runs")
    local w = leaf({ 1 })
    w:register_post_accumulate_grad_hook(function()
      wick.autograd.queue_callback(function() error("late boom") end)
    end)
    local err = support.error_of(function() (w * 2):sum():backward() end)
    assert.truthy(err:find("backward: a queued callback raised:", 1, true), err)
    assert.truthy(err:find("late boom", 1, true), err)
    -- the queue was restored: queueing outside backward is refused again
    assert_error_has(function() wick.autograd.queue_callback(function() end) end, "while a backward runs")
  end)
end)

describe("register_hook", function()
  it("sees a leaf's whole gradient of the backward once, and may replace it", function()
    local w, x = leaf({ 1, 2, 3 }), wick.tensor({ 4, 5, 6 }, F64)
    local seen = {}
    w:register_hook(function(g) seen[#seen + 1] = g:clone() end)
    w:register_hook(function(g) return g * 10 end)
    local loss = (w * x):sum() + (w * w):sum()
    loss:backward()
    assert.equal(1, #seen)
    assert_close(x + w:detach() * 2, seen[1], 0)
    assert_close((x + w:detach() * 2) * 10, w.grad, 0)
    -- the next backward's hook sees that backward's gradient only, not .grad
    ;(w * x):sum():backward()
    assert.equal(2, #seen)
    assert_close(x, seen[2], 0)
    assert_close((x + w:detach() * 2) * 10 + x * 10, w.grad, 0)
  end)

  it("runs before the post-accumulate-grad hooks, in registration order", function()
    local w, log = leaf({ 1 }), {}
    local function note(what, v) log[#log + 1] = ("%s %g"):format(what, v:item()) end
    w:register_post_accumulate_grad_hook(function(t) note("post", t.grad) end)
    w:register_hook(function(g) note("grad", g); return g + 1 end)
    w:register_hook(function(g) note("grad", g) end)
    ;(w * 3):sum():backward()
    assert.same({ "grad 3", "grad 4", "post 4" }, log)
  end)

  it("on a non-leaf changes what flows to the inputs", function()
    local a = leaf({ 1, 2 })
    local h = a * 2
    local seen
    h:register_hook(function(g) seen = g:clone(); return g * 0 + 5 end)
    ;(h * h):sum():backward()
    assert_close(a:detach() * 4, seen, 0) -- d(h^2)/dh = 2h = 4a
    assert_close(wick.tensor({ 10, 10 }, F64), a.grad, 0) -- 5 * dh/da
    assert.is_nil(h.grad)
  end)

  it("runs on the root of backward, leaf or not", function()
    local w = leaf({ 1, 2 })
    w:register_hook(function(g) return g * 3 end)
    w:backward(wick.tensor({ 1, 1 }, F64))
    assert_close(wick.tensor({ 3, 3 }, F64), w.grad, 0)
    local y = (w * 1):sum()
    local calls = 0
    y:register_hook(function(g) calls = calls + 1; return g * 2 end)
    y:backward()
    assert.equal(1, calls)
    assert_close(wick.tensor({ 3 + 6, 3 + 6 }, F64), w.grad, 0) -- w's own hook triples the 2
  end)

  it("refuses a returned value of another shape or kind, at the backward line; remove() stops it", function()
    local w = leaf({ 1, 2 })
    local h = w:register_hook(function() return wick.zeros(3, F64) end)
    assert_error_has(function() (w * 2):sum():backward() end, "backward: a hook raised:", "of shape [3], float64, on cpu, where the gradient is [2]")
    h:remove()
    h = w:register_hook(function() return 42 end)
    assert_error_has(function() (w * 2):sum():backward() end, "returned a number")
    h:remove()
    w.grad = nil
    ;(w * 2):sum():backward()
    assert_close(wick.tensor({ 2, 2 }, F64), w.grad, 0)
    assert_error_has(function() wick.tensor({ 1 }):register_hook(function() end) end, "doesn't require gradient")
  end)
end)

describe("hooks of tensors that are gone", function()
  it("are dropped with them: a module's full backward hook in a loop does not keep each step's tensors", function()
    local lin = wick.nn.Linear(256, 256)
    lin:register_full_backward_hook(function() end)
    local function live() return wick.memory_stats()["allocated_bytes.all.current"] end
    local function steps(n)
      for _ = 1, n do lin(wick.randn(64, 256, { requires_grad = true })):sum():backward() end
      collectgarbage(); collectgarbage()
      lin(wick.randn(64, 256, { requires_grad = true })):sum():backward() -- (drains what the collection freed)
      collectgarbage(); collectgarbage()
      return live()
    end
    local after_20 = steps(20)
    local after_120 = steps(100)
    -- each step's input and gradients are 64 KiB each: 100 more steps kept would be over 12 MiB
    assert.is_true(after_120 - after_20 < 2 * 2 ^ 20, ("grew by %d bytes"):format(after_120 - after_20))
  end)
end)

describe("a full backward hook returning something else than gradients", function()
  it("is an error naming the module and what it returned", function()
    local lin = wick.nn.Linear(2, 2)
    lin:register_full_backward_hook(function() return 42 end)
    local ok, err = pcall(function() lin(wick.randn(3, 2, { requires_grad = true })):sum():backward() end)
    assert.is_false(ok)
    assert.is_truthy(tostring(err):find("a full backward hook returned 42", 1, true))
  end)
end)

describe("hooks and retain_grad across an in-place op (siren's forward_with_activations)", function()
  it("retain_grad follows the tensor to its new value; a hook stays with the value it was registered on", function()
    local x = wick.tensor({ -1.0, 2.0, 3.0 }, { requires_grad = true })
    local y = x * 2
    y:retain_grad()
    local seen = {}
    y:register_hook(function(g) seen.before = g:totable() end)
    y:relu_()
    y:register_hook(function(g) seen.after = g:totable() end)
    ;(y * 3):sum():backward()
    assert.are.same({ 3, 3, 3 }, y.grad:totable()) -- the gradient of relu(2x), not of 2x
    assert.are.same({ 0, 3, 3 }, seen.before)
    assert.are.same({ 3, 3, 3 }, seen.after)
    -- a matmul's output (a view of its 2-D product) modified in place
    local h = wick.randn(2, 3, 2, { requires_grad = true }):matmul(wick.randn(4, 2):t())
    h:retain_grad()
    h:relu_()
    ;(h * 3):sum():backward()
    assert.are.same(wick.full({ 2, 3, 4 }, 3):totable(), h.grad:totable())
    -- autograd.grad fills it too, as PyTorch's; a retained tensor that is gone is skipped
    local a = wick.tensor({ 1.0, 2.0 }, { requires_grad = true })
    local b = a * 2
    b:retain_grad()
    wick.autograd.grad((b * b):sum(), { a })
    assert.are.same({ 4, 8 }, b.grad:totable())
    local loss
    do
      local z = a * 5
      z:retain_grad()
      loss = (z * z):sum()
    end
    collectgarbage(); collectgarbage()
    loss:backward()
    assert.are.same({ 50, 100 }, a.grad:totable())
  end)
end)
