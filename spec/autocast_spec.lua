-- wick.autocast (src/core/autocast.c, lua/wick/init.lua): the per-thread state,
-- nesting and restoring (also after an error), PyTorch's CPU lists (products in
-- the lower dtype, losses in float32, float64 untouched), gradients in the
-- parameters' dtype, the weight cast cache, and an MLP's training step under
-- bfloat16 autocast against the same step in float32.
local wick = require("wick")
local nn = wick.nn
local F = nn.functional
local support = require("spec.support")

local function autocast(fn, ...) return wick.autocast({ device_type = "cpu" }, fn, ...) end

describe("wick.autocast state", function()
  it("is off outside, on inside, with PyTorch's default dtypes", function()
    assert.is_false(wick.is_autocast_enabled("cpu"))
    assert.is_false(wick.is_autocast_enabled()) -- PyTorch's default device_type: cuda
    assert.equal("bfloat16", wick.get_autocast_dtype("cpu"))
    assert.equal("float16", wick.get_autocast_dtype("cuda"))
    local a, b, c = autocast(function(x, y)
      assert.is_true(wick.is_autocast_enabled("cpu"))
      assert.is_false(wick.is_autocast_enabled("cuda"))
      return x, y, nil
    end, 1, 2)
    assert.equal(1, a)
    assert.equal(2, b)
    assert.is_nil(c)
    assert.is_false(wick.is_autocast_enabled("cpu"))
  end)

  it("nests: an inner region's dtype and enabled = false hold inside it only", function()
    local x = wick.randn(3, 4)
    autocast(function()
      assert.equal("bfloat16", (x:mm(x:t())).dtype)
      wick.autocast({ device_type = "cpu", dtype = "float16" }, function()
        assert.equal("float16", wick.get_autocast_dtype("cpu"))
        assert.equal("float16", (x:mm(x:t())).dtype)
      end)
      assert.equal("bfloat16", wick.get_autocast_dtype("cpu"))
      wick.autocast({ device_type = "cpu", enabled = false }, function()
        assert.is_false(wick.is_autocast_enabled("cpu"))
        assert.equal("float32", (x:mm(x:t())).dtype)
      end)
      assert.is_true(wick.is_autocast_enabled("cpu"))
      assert.equal("bfloat16", (x:mm(x:t())).dtype)
    end)
    assert.equal("float32", (x:mm(x:t())).dtype)
  end)

  it("restores the state when fn raises, and the error keeps its place", function()
    local ok, err = pcall(wick.autocast, { device_type = "cpu", dtype = "float16" }, function()
      wick.autocast({ device_type = "cpu", enabled = false }, function() error("inner boom") end)
    end)
    assert.is_false(ok)
    assert.matches("autocast_spec.lua:%d+: inner boom", err)
    assert.is_false(wick.is_autocast_enabled("cpu"))
    assert.equal("bfloat16", wick.get_autocast_dtype("cpu"))
  end)

  it("rejects bad arguments", function()
    local f = function() end
    assert.has_error(function() wick.autocast({ device_type = "tpu" }, f) end)
    assert.has_error(function() wick.autocast({ dtype = "bfloat16" }, f) end, "autocast: the option device_type ('cpu' or 'cuda') is required")
    assert.has_error(function() wick.autocast({ device_type = "cpu", dtype = "int64" }, f) end)
    -- float32 and float64 are PyTorch's unsupported target dtypes: a warning, and autocast off
    local w = support.warnings_of(function()
      assert.is_false(wick.autocast({ device_type = "cpu", dtype = "float64" }, function() return wick.is_autocast_enabled("cpu") end))
    end)
    assert.is_truthy(w[1] and w[1]:find("Disabling autocast", 1, true))
    assert.has_error(function() wick.autocast({ device_type = "cpu", fast = true }, f) end)
    assert.has_error(function() wick.autocast({ device_type = "cpu" }, 3) end)
    assert.is_false(wick.is_autocast_enabled("cpu"))
  end)

  it("without fn is a decorator (@torch.autocast(...), minGPT's @autocast()), state restored after each call", function()
    local mm = wick.autocast({ device_type = "cpu", dtype = "bfloat16" })(function(a, b) return a:mm(b), wick.is_autocast_enabled("cpu") end)
    local out, on = mm(wick.ones(2, 3), wick.ones(3, 2))
    assert.are.equal("bfloat16", out.dtype)
    assert.is_true(on)
    assert.is_false(wick.is_autocast_enabled("cpu"))
    assert.are.equal("bfloat16", wick.autocast("cpu", { dtype = "bfloat16" })(function(a) return a:mm(a) end)(wick.ones(2, 2)).dtype)
    assert.has_error(function() wick.autocast({ device_type = "cpu" })(3) end, "autocast: expected a function for argument 'f', got 3")
    assert.has_error(function() wick.autocast({ device_type = "cpu", dtype = "int64" }) end)
    if not wick.cuda.is_available() then -- torch.cuda.amp.autocast() decorates too; without a GPU it runs f plainly
      local saved = io.stderr
      io.stderr = { write = function() end }
      local d = wick.cuda.amp.autocast()(function() return wick.ones(2, 2):mm(wick.ones(2, 2)).dtype end)()
      io.stderr = saved
      assert.are.equal("float32", d)
    end
  end)

  it("accepts the device_type alone, and cuda without a GPU runs fn plainly", function()
    assert.equal("bfloat16", wick.autocast("cpu", function() return wick.ones(2, 2):mm(wick.ones(2, 2)).dtype end))
    if not wick.cuda.is_available() then
      local saved = io.stderr
      io.stderr = { write = function() end }
      local d = wick.autocast({ device_type = "cuda" }, function() return wick.ones(2, 2):mm(wick.ones(2, 2)).dtype end)
      io.stderr = saved
      assert.equal("float32", d)
    end
  end)
end)

describe("wick.autocast lists (CPU)", function()
  local x = wick.randn(4, 8)
  local w = wick.randn(6, 8)
  local b = wick.randn(6)
  local target = wick.tensor({ 1, 2, 3, 4 }, { dtype = "int64" })

  it("runs products, convolutions and attention in the autocast dtype", function()
    autocast(function()
      assert.equal("bfloat16", x:mm(w:t()).dtype)
      assert.equal("bfloat16", x:matmul(w:t()).dtype)
      assert.equal("bfloat16", wick.addmm(b, x, w:t()).dtype)
      assert.equal("bfloat16", x:view(1, 4, 8):bmm(w:t():reshape(1, 8, 6)).dtype)
      assert.equal("bfloat16", F.linear(x, w, b).dtype)
      assert.equal("bfloat16", F.linear(x:view(2, 2, 8), w, b).dtype)
      local img, k = wick.randn(1, 3, 6, 6), wick.randn(4, 3, 3, 3)
      assert.equal("bfloat16", F.conv2d(img, k).dtype)
      assert.equal("bfloat16", F.conv_transpose2d(img, k:transpose(1, 2):contiguous()).dtype)
      local q = x:view(1, 4, 8)
      assert.equal("bfloat16", F.scaled_dot_product_attention(q, q, q).dtype)
    end)
    assert.equal("float32", x:mm(w:t()).dtype)
  end)

  it("runs the losses and prod in float32, and leaves softmax and sum alone (CPU list)", function()
    autocast(function()
      local y = F.linear(x, w, b)
      assert.equal("float32", F.mse_loss(y, wick.zeros(4, 6)).dtype)
      assert.equal("float32", F.cross_entropy(y, target).dtype)
      assert.equal("float32", F.nll_loss(y:log_softmax(2), target).dtype)
      assert.equal("float32", F.l1_loss(y, y * 2).dtype)
      assert.equal("float32", F.binary_cross_entropy(y:sigmoid(), wick.rand(4, 6):bfloat16()).dtype)
      assert.equal("float32", F.binary_cross_entropy_with_logits(y, wick.rand(4, 6)).dtype)
      assert.equal("float32", y:prod().dtype)
      assert.equal("bfloat16", y:softmax(2).dtype)
      assert.equal("bfloat16", y:sum().dtype)
      assert.equal("float32", x:softmax(2).dtype)
      assert.equal("bfloat16", y:relu().dtype)
    end)
  end)

  it("runs layer_norm of a bfloat16 input with float32 weights in float32 (a Linear then a LayerNorm)", function()
    local model = nn.Sequential(nn.Linear(8, 6), nn.LayerNorm(6))
    local y = autocast(function() return model(x) end)
    assert.equal("float32", y.dtype)
    y:sum():backward()
    assert.equal("float32", model:get(1).weight.grad.dtype)
    autocast(function()
      local h = x:bfloat16()
      assert.equal("bfloat16", F.layer_norm(h, { 8 }).dtype) -- one dtype: nothing to do
      assert.equal("bfloat16", F.layer_norm(h, { 8 }, h[1], h[2]).dtype)
    end)
  end)

  it("never casts float64, nor integers", function()
    autocast(function()
      assert.equal("float64", x:double():mm(w:double():t()).dtype)
      local i = wick.ones(2, 2, { dtype = "int64" })
      assert.equal("int64", i:mm(i).dtype)
      -- like PyTorch: a float64 operand next to a float32 one gives a dtype error
      assert.has_error(function() x:double():mm(w:t()) end)
    end)
  end)

  it("gives gradients in the inputs' dtypes, with the cast's values", function()
    local xr = x:clone():requires_grad_()
    local wr = w:clone():requires_grad_()
    local y = autocast(function() return F.linear(xr, wr) end)
    assert.equal("bfloat16", y.dtype)
    y:float():sum():backward()
    assert.equal("float32", wr.grad.dtype)
    assert.equal("float32", xr.grad.dtype)
    -- d sum(x w^T) / d w = column sums of x (of x rounded to bfloat16)
    local expect = x:bfloat16():float():sum(1):expand(6, 8)
    assert.is_true(wr.grad:allclose(expect, 1e-2, 1e-2))
  end)
end)

describe("wick.autocast weight cache", function()
  it("reuses a weight's cast within a region, through several backwards", function()
    local lin = nn.Linear(5, 3)
    local x = wick.randn(2, 5)
    autocast(function()
      for _ = 1, 3 do
        lin:zero_grad()
        local loss = lin(x):float():sum()
        loss:backward() -- frees the graph: the next use must cast again
        assert.equal("float32", lin.weight.grad.dtype)
      end
      -- used twice in one graph: the gradient adds up
      lin:zero_grad()
      local y = lin(x):float():sum() + lin(x):float():sum()
      y:backward()
      local one = x:bfloat16():float():sum(1):expand(3, 5) * 2
      assert.is_true(lin.weight.grad:allclose(one, 2e-2, 2e-2))
    end)
  end)

  it("sees a weight written inside the region", function()
    local w = wick.ones(2, 2):requires_grad_()
    local x = wick.ones(1, 2)
    autocast(function()
      assert.equal(2, x:mm(w):float()[1][1]:item())
      wick.no_grad(function() w:mul_(3) end)
      assert.equal(6, x:mm(w):float()[1][1]:item())
    end)
  end)

  it("records the cast when grad mode turns on after a no_grad use", function()
    local w = wick.ones(2, 2):requires_grad_()
    local x = wick.ones(1, 2)
    autocast(function()
      wick.no_grad(function() return x:mm(w) end)
      x:mm(w):float():sum():backward()
    end)
    assert.is_not_nil(w.grad)
    assert.equal(2, w.grad:sum():item() / 2)
  end)
end)

describe("wick.autocast training", function()
  -- an MLP's steps under bfloat16 autocast follow the float32 run closely
  local function run(use_autocast)
    wick.manual_seed(7)
    local model = nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 5))
    local opt = wick.optim.SGD(model:parameters(), { lr = 0.1 })
    local x = wick.randn(16, 20)
    local y = wick.randint(1, 6, { 16 })
    local losses = {}
    for step = 1, 5 do
      opt:zero_grad()
      local loss
      local function forward() loss = F.cross_entropy(model(x), y) end
      if use_autocast then autocast(forward) else forward() end
      loss:backward()
      opt:step()
      losses[step] = loss:item()
    end
    for _, p in ipairs(model:parameters()) do assert.equal("float32", p.dtype) end
    return losses
  end

  it("matches float32 within 2%", function()
    local ref, amp = run(false), run(true)
    for i = 1, #ref do
      assert.is_true(math.abs(amp[i] - ref[i]) <= 0.02 * math.abs(ref[i]),
        ("step %d: %g vs %g"):format(i, amp[i], ref[i]))
    end
    assert.is_true(ref[5] < ref[1])
  end)
end)

describe("autocast lists for the ops written in Lua", function()
  it("baddbmm and prelu in the lower dtype; cdist, trace, linear algebra, pair losses, reflection padding in float32", function()
    local F = wick.nn.functional
    wick.autocast({ device_type = "cpu", dtype = "bfloat16" }, function()
      assert.are.equal("bfloat16", wick.baddbmm(wick.randn(1, 3, 3), wick.randn(1, 3, 3), wick.randn(1, 3, 3)).dtype)
      assert.are.equal("bfloat16", F.prelu(wick.randn(2, 3), wick.ones(1) * 0.25).dtype)
      local xb = wick.randn(3, 3):to("bfloat16")
      local spd = xb:matmul(xb:t()):float() + wick.eye(3) * 3
      assert.are.equal("float32", wick.cdist(xb, xb).dtype)
      assert.are.equal("float32", xb:trace().dtype)
      assert.are.equal("float32", spd:to("bfloat16"):inverse().dtype)
      assert.are.equal("float32", wick.linalg.cholesky(spd:to("bfloat16")).dtype)
      assert.are.equal("float32", xb:pinverse().dtype) -- its products too: one op, as PyTorch's kernel
      assert.are.equal("float32", F.cosine_embedding_loss(xb, xb, wick.ones(3)).dtype)
      assert.are.equal("float32", F.pad(xb:reshape(1, 1, 3, 3), { 1, 1, 1, 1 }, "reflect").dtype)
    end)
    -- outside autocast nothing changes
    assert.are.equal("float32", wick.baddbmm(wick.randn(1, 3, 3), wick.randn(1, 3, 3), wick.randn(1, 3, 3)).dtype)
  end)
end)
