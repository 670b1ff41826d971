-- Indexing and slicing as docs/api.md "Tensors" specifies: t[{k1, k2, ...}] with
-- numbers, {}, {a, b} (inclusive, negative from the end) and {a, b, step};
-- t[mask]; t[idx]; every form on the left of `=`; under autograd; the masked
-- and index ops (masked_fill, masked_select, masked_scatter_, index_fill_,
-- index_copy_, index_put_). The key-by-key cases run on the CPU and again on
-- cuda:0 when a GPU is there (pending otherwise).
local wick = require("wick")
local support = require("spec.support")
local assert_close, assert_error_has, shape_of = support.assert_close, support.assert_error_has, support.shape_of

local function I(values, dev) return wick.tensor(values, { dtype = "int64", device = dev }) end
local function vals(t) return t:cpu():totable() end

-- rows r of a 2-D table (1-based, inclusive, by step)
local function rows(tbl, first, last, step)
  local out = {}
  for r = first, last, step or 1 do out[#out + 1] = tbl[r] end
  return out
end

-- 5 x 4 x 3 values 0..59 as nested Lua tables, and the same tensor
local function cube_table()
  local t, v = {}, 0
  for i = 1, 5 do
    t[i] = {}
    for j = 1, 4 do
      t[i][j] = {}
      for k = 1, 3 do t[i][j][k] = v; v = v + 1 end
    end
  end
  return t
end

local function key_cases(dev)
  local function T(v, opts)
    opts = opts or {}
    opts.device = dev
    return wick.tensor(v, opts)
  end
  local C = cube_table()
  local function cube() return T(C) end

  describe("reads", function()
    it("x[{{}, -1}] is PyTorch's x[:, -1, :]: the last entry of dim 2, a view", function()
      local x = cube()
      local y = x[{ {}, -1 }]
      assert.are.same({ 5, 3 }, shape_of(y))
      local want = {}
      for i = 1, 5 do want[i] = C[i][4] end
      assert.are.same(want, vals(y))
      assert.are.same(vals(x:select(2, -1)), vals(y))
      assert.is_true(y:is_same_storage(x))
    end)

    it("x[{{1, n}}] is x[:n] and x[{{3, 5}}] is x[2:5] (inclusive ranges)", function()
      local x = cube()
      assert.are.same(rows(C, 1, 2), vals(x[{ { 1, 2 } }]))
      assert.are.same(rows(C, 3, 5), vals(x[{ { 3, 5 } }]))
      assert.are.same({ 3, 4, 3 }, shape_of(x[{ { 3, 5 } }]))
      assert.are.same(rows(C, 4, 5), vals(x[{ { -2, -1 } }]))
      assert.are.same(rows(C, 2, 4), vals(x[{ { 2, -2 } }]))
      assert.are.same(rows(C, 1, 5), vals(x[{ { -5, 5 } }]))
    end)

    it("a number selects (the dim goes away), trailing entries default to whole dims", function()
      local x = cube()
      assert.are.same(C[2], vals(x[{ 2 }]))
      assert.are.same(C[2][3], vals(x[{ 2, 3 }]))
      assert.are.equal(C[5][4][3], x[{ -1, -1, -1 }]:item())
      assert.are.same({}, shape_of(x[{ 1, 1, 1 }]))
      assert.are.same({ C[1][2][3], C[2][2][3] }, vals(x[{ { 1, 2 }, 2, 3 }]))
      assert.are.same({ 5, 4, 3 }, shape_of(x[{}]))
      assert.are.same({ 5, 4, 3 }, shape_of(x[{ {}, {}, {} }]))
      local s = T(3)[{}] -- a 0-dim tensor with the empty key: an alias
      assert.are.same({}, shape_of(s))
      assert.are.equal(3, s:item())
    end)

    it("{a, b, step} takes every step-th element as a strided view", function()
      local x = cube()
      local y = x[{ { 1, -1, 2 } }]
      assert.are.same({ C[1], C[3], C[5] }, vals(y))
      assert.is_true(y:is_same_storage(x))
      assert.are.same({ C[2], C[4] }, vals(x[{ { 2, 5, 2 } }]))
      assert.are.same({ C[1], C[4] }, vals(x[{ { 1, 5, 3 } }]))
      assert.are.same({ C[1] }, vals(x[{ { 1, 5, 7 } }]))
      local z = x[{ 2, { 1, 4, 3 }, { 1, 3, 2 } }]
      assert.are.same({ { C[2][1][1], C[2][1][3] }, { C[2][4][1], C[2][4][3] } }, vals(z))
      -- a step slice of a step slice
      assert.are.same({ C[1], C[5] }, vals(y[{ { 1, 3, 2 } }]))
    end)

    it("views share storage: writes through them show in the tensor", function()
      local x = cube()
      local y = x[{ { 2, 3 }, -1 }]
      y:fill_(-7)
      assert.are.same({ -7, -7, -7 }, vals(x[2][4]))
      assert.are.same({ -7, -7, -7 }, vals(x[3][4]))
      assert.are.same(C[4][4], vals(x[4][4]))
      local s = x[{ { 1, -1, 2 }, 1, 1 }]
      s:fill_(100)
      assert.are.same({ 100, C[2][1][1], 100, C[4][1][1], 100 }, vals(x[{ {}, 1, 1 }]))
    end)

    it("empty ranges: {1, 0} and {n + 1, n}; keys of empty tensors", function()
      local x = cube()
      assert.are.same({ 0, 4, 3 }, shape_of(x[{ { 1, 0 } }]))
      assert.are.same({ 0, 4, 3 }, shape_of(x[{ { 6, 5 } }]))
      assert.are.same({ 5, 0, 3 }, shape_of(x[{ {}, { 3, 2 } }]))
      local e = T({}):view(0, 3)
      assert.are.same({ 0, 3 }, shape_of(e[{ {} }]))
      assert.are.same({ 0, 2 }, shape_of(e[{ {}, { 2, 3 } }]))
      assert.are.same({ 0 }, shape_of(e[{ {}, 1 }]))
      assert.are.same({ 0, 3 }, shape_of(e[{ { 1, 0 } }]))
      assert.are.same({ 0 }, shape_of(e[e:gt(0)]))
      assert.are.same({ 0, 3 }, shape_of(e[I({}, dev)]))
    end)

    it("t[mask] is a 1-D copy of the selected elements in row-major order", function()
      local x = T({ { 1, -2, 3 }, { -4, 5, -6 } })
      local m = x:gt(0)
      local y = x[m]
      assert.are.same({ 1, 3, 5 }, vals(y))
      assert.is_false(y:is_same_storage(x))
      y:fill_(0)
      assert.are.same({ { 1, -2, 3 }, { -4, 5, -6 } }, vals(x))
      assert.are.same({ -2, -4, -6 }, vals(x[x:lt(0)]))
      assert.are.same({ 0 }, shape_of(x[x:gt(10)]))
      -- a mask over the leading dims selects whole rows (PyTorch's rule)
      assert.are.same({ { -4, 5, -6 } }, vals(x[T({ false, true }, { dtype = "bool" })]))
      -- of a non-contiguous tensor
      local xt = x:t()
      assert.are.same({ 1, 5, 3 }, vals(xt[xt:gt(0)]))
      -- a 0-dim tensor with a 0-dim mask
      assert.are.same({ 4 }, vals(T(4)[T(true)]))
    end)

    it("t[idx] (int64, 1-based, negative from the end) selects along dim 1, a copy", function()
      local x = cube()
      assert.are.same({ C[3], C[1], C[3] }, vals(x[I({ 3, 1, 3 }, dev)]))
      assert.are.same({ C[5], C[1] }, vals(x[I({ -1, -5 }, dev)]))
      assert.are.same({ 2, 2, 4, 3 }, shape_of(x[I({ { 1, 2 }, { 3, 4 } }, dev)]))
      assert.are.same(C[2], vals(x[I(2, dev)]))
      local i32 = wick.tensor({ 2 }, { dtype = "int32", device = dev })
      assert.are.same({ C[2] }, vals(x[i32]))
      local y = x[I({ 1 }, dev)]
      y:fill_(0)
      assert.are.same(C[1], vals(x[1]))
    end)
  end)

  describe("index tensors inside keys", function()
    it("index tensors inside a key: along their dims, next to each other, broadcast together", function()
      local x = cube()
      local y = x[{ {}, I({ 4, 1 }, dev) }] -- PyTorch's x[:, [3, 0]]
      assert.are.same({ 5, 2, 3 }, shape_of(y))
      assert.are.same({ C[2][4], C[2][1] }, vals(y[2]))
      -- x[[0, 4], [1, 2]]: pairs of positions
      assert.are.same({ C[1][2], C[5][3] }, vals(x[{ I({ 1, 5 }, dev), I({ 2, 3 }, dev) }]))
      -- broadcast: rows {1, 2} x columns {3}
      assert.are.same({ { C[1][3][1] }, { C[2][3][1] } }, vals(x[{ I({ { 1 }, { 2 } }, dev), I({ 3 }, dev), 1 }]))
      -- after a select and with ranges around
      assert.are.same({ { C[2][4][2], C[2][4][3] } }, vals(x[{ 2, I({ -1 }, dev), { 2, 3 } }]))
      -- a loss's picks: logits[arange(B), targets]
      local logits = T({ { 1, 2, 3 }, { 4, 5, 6 } })
      assert.are.same({ 3, 4 }, vals(logits[{ I({ 1, 2 }, dev), I({ 3, 1 }, dev) }]))
      -- a bool mask entry: x[:, m] selects along the dims it covers
      local keep = T({ true, false, false, true }, { dtype = "bool" })
      assert.are.same({ { C[1][1], C[1][4] }, { C[2][1], C[2][4] } }, vals(x[{ { 1, 2 }, keep }]))
      local y = T({ { 1, 2, 3 }, { 4, 5, 6 } })
      y[{ {}, T({ false, true, true }, { dtype = "bool" }) }] = 0
      assert.are.same({ { 1, 0, 0 }, { 4, 0, 0 } }, vals(y))
    end)

    it("write, under autograd too, and index_put_ with several index tensors", function()
      local y = T({ { 0, 0, 0 }, { 0, 0, 0 } })
      y[{ I({ 1, 2 }, dev), I({ 3, 1 }, dev) }] = T({ 5, 6 })
      y[{ {}, I({ 2 }, dev) }] = 9
      assert.are.same({ { 0, 9, 5 }, { 6, 9, 0 } }, vals(y))
      y:index_put_({ I({ 2, 2 }, dev), I({ 3, 3 }, dev) }, T({ 1, 2 }), true)
      assert.are.same({ 6, 9, 3 }, vals(y[2]))
      local x = T({ { 1, 2, 3 }, { 4, 5, 6 } }, { requires_grad = true })
      local v = T({ 10, 20 }, { requires_grad = true })
      local z = x * 1
      z[{ I({ 2, 1 }, dev), I({ 1, 3 }, dev) }] = v
      assert.are.same({ { 1, 2, 20 }, { 10, 5, 6 } }, vals(z))
      ;(z * T({ { 1, 2, 3 }, { 4, 5, 6 } })):sum():backward()
      assert_close(vals(x.grad), { { 1, 2, 0 }, { 0, 5, 6 } }, 0)
      assert_close(vals(v.grad), { 4, 3 }, 0)
      local w = T({ { 1, 2, 3 }, { 4, 5, 6 } }, { requires_grad = true })
      w[{ {}, I({ 2, 2 }, dev) }]:sum():backward()
      assert_close(vals(w.grad), { { 0, 2, 0 }, { 0, 2, 0 } }, 0)
    end)
  end)

  describe("writes", function()
    it("t[{...}] = number fills the view; = tensor copies with broadcasting", function()
      local x = cube()
      x[{ {}, -1 }] = 0
      for i = 1, 5 do assert.are.same({ 0, 0, 0 }, vals(x[i][4])) end
      assert.are.same(C[1][3], vals(x[1][3]))
      x[{ { 2, 3 }, 1 }] = T({ 7, 8, 9 }) -- broadcast over dim 1
      assert.are.same({ 7, 8, 9 }, vals(x[2][1]))
      assert.are.same({ 7, 8, 9 }, vals(x[3][1]))
      x[{ 1, { 1, 2 }, { 2, 3 } }] = T({ { 1, 2 }, { 3, 4 } })
      assert.are.same({ { C[1][1][1], 1, 2 }, { C[1][2][1], 3, 4 } }, vals(x[{ 1, { 1, 2 } }]))
      x[{ { 1, -1, 2 } }] = -1
      for _, i in ipairs({ 1, 3, 5 }) do assert.is_true(x[i]:eq(-1):all()) end
      assert.is_false(x[2]:eq(-1):all())
      x[{ 4 }] = T({ { { 1, 1, 1 }, { 2, 2, 2 }, { 3, 3, 3 }, { 4, 4, 4 } } }) -- a leading 1 dim is dropped
      assert.are.same({ { 1, 1, 1 }, { 2, 2, 2 }, { 3, 3, 3 }, { 4, 4, 4 } }, vals(x[4]))
      x[2] = 5
      assert.is_true(x[2]:eq(5):all())
      x[{}] = 3
      assert.is_true(x:eq(3):all())
    end)

    it("t[mask] = number, = a one-element tensor, = count(mask) values like PyTorch", function()
      local x = T({ { 1, -2, 3 }, { -4, 5, -6 } })
      x[x:lt(0)] = 0
      assert.are.same({ { 1, 0, 3 }, { 0, 5, 0 } }, vals(x))
      x[x:eq(0)] = T({ 10, 20, 30 })
      assert.are.same({ { 1, 10, 3 }, { 20, 5, 30 } }, vals(x))
      x[x:gt(9)] = T({ 2 })
      assert.are.same({ { 1, 2, 3 }, { 2, 5, 2 } }, vals(x))
      x[T({ true, false }, { dtype = "bool" })] = T({ 7, 8, 9 }) -- rows, broadcast
      assert.are.same({ { 7, 8, 9 }, { 2, 5, 2 } }, vals(x))
      x[x:gt(100)] = 1 -- selects nothing
      assert.are.same({ { 7, 8, 9 }, { 2, 5, 2 } }, vals(x))
      local xt = T({ { 1, 2 }, { 3, 4 } }):t() -- non-contiguous: {{1, 3}, {2, 4}}
      xt[xt:gt(2)] = T({ -3, -4 })
      assert.are.same({ { 1, -3 }, { 2, -4 } }, vals(xt))
      assert_error_has(function() x[x:gt(4)] = T({ 1, 2 }) end, "shape mismatch", "[2]", "[4]")
    end)

    it("t[idx] = v writes rows (the last of repeated indices wins)", function()
      local x = T({ { 1, 2 }, { 3, 4 }, { 5, 6 } })
      x[I({ 1, -1 }, dev)] = 0
      assert.are.same({ { 0, 0 }, { 3, 4 }, { 0, 0 } }, vals(x))
      x[I({ 2 }, dev)] = T({ 9, 8 })
      assert.are.same({ { 0, 0 }, { 9, 8 }, { 0, 0 } }, vals(x))
      x[I({ 3, 1 }, dev)] = T({ { 1, 1 }, { 2, 2 } })
      assert.are.same({ { 2, 2 }, { 9, 8 }, { 1, 1 } }, vals(x))
      x[I({ 1, 1 }, dev)] = T({ { 5, 5 }, { 6, 6 } })
      assert.are.same({ 6, 6 }, vals(x[1]))
    end)

    it("a value that overlaps the written region is read before the write", function()
      local x = T({ 0, 1, 2, 3, 4 })
      x[{ { 2, 5 } }] = x[{ { 1, 4 } }]
      assert.are.same({ 0, 0, 1, 2, 3 }, vals(x))
      x[I({ 1, 2 }, dev)] = x[{ { 4, 5 } }]
      assert.are.same({ 2, 3, 1, 2, 3 }, vals(x))
      x[x:gt(1)] = x[{ { 1, 4 } }]
      assert.are.same({ 2, 3, 1, 1, 2 }, vals(x))
    end)

    it("a plain Lua table of values works as the value (PyTorch's x[:2] = [1, 2])", function()
      local x = T({ { 0, 0, 0 }, { 0, 0, 0 } })
      x[{ {}, { 1, 2 } }] = { { 1, 2 }, { 3, 4 } }
      x[2] = { 7, 8, 9 }
      x[x:eq(0)] = { 5 }
      assert.are.same({ { 1, 2, 5 }, { 7, 8, 9 } }, vals(x))
      local y = T({ 0, 0, 0 }, { dtype = "int64" })
      y[{ { 1, 2 } }] = { 4, 5 }
      assert.are.same({ 4, 5, 0 }, vals(y))
      assert_error_has(function() x[1] = { 1, 2 } end, "shape mismatch")
    end)

    it("values convert to the tensor's dtype", function()
      local x = T({ 1, 2, 3 }, { dtype = "int64" })
      x[{ { 1, 2 } }] = T({ 7.0, 8.0 })
      x[x:eq(3)] = 4
      assert.are.same({ 7, 8, 4 }, vals(x))
      assert.are.equal("int64", x.dtype)
    end)
  end)

  describe("autograd", function()
    it("reads: the gradient lands where the key read", function()
      local x = T({ { 1, 2, 3, 4 }, { 5, 6, 7, 8 }, { 9, 10, 11, 12 } }, { requires_grad = true })
      local y = x[{ { 1, -1, 2 }, { 2, 4, 2 } }] * T({ { 1, 2 }, { 3, 4 } })
      y:sum():backward()
      assert_close(vals(x.grad), { { 0, 1, 0, 2 }, { 0, 0, 0, 0 }, { 0, 3, 0, 4 } }, 0)
      x.grad = nil
      local z = x[{ -1, { 2, 3 } }]:sum() + x[x:gt(10)]:sum() * 2 + x[I({ 2, 2 }, dev)]:sum()
      z:backward()
      assert_close(vals(x.grad), { { 0, 0, 0, 0 }, { 2, 2, 2, 2 }, { 0, 1, 3, 2 } }, 0)
    end)

    it("writes: g with zeros where written for the tensor, g[key] summed to the value's shape", function()
      local x = T({ { 1, 2, 3 }, { 4, 5, 6 } }, { requires_grad = true })
      local v = T({ 10, 20 }, { requires_grad = true })
      local w = T({ { 1, 2, 3 }, { 4, 5, 6 } })
      local y = x * 1
      y[{ {}, { 2, 3 } }] = v -- broadcast over rows
      assert.are.same({ { 1, 10, 20 }, { 4, 10, 20 } }, vals(y))
      assert.is_truthy(tostring(y.grad_fn):find("IndexPut", 1, true))
      ;(y * w):sum():backward()
      assert_close(vals(x.grad), { { 1, 0, 0 }, { 4, 0, 0 } }, 0)
      assert_close(vals(v.grad), { 2 + 5, 3 + 6 }, 0)
    end)

    it("writes into a plain tensor of a value that requires grad, and numbers into a tracked one", function()
      local v = T({ 1, 2 }, { requires_grad = true })
      local buf = T({ 0, 0, 0, 0 })
      buf[{ { 2, 4, 2 } }] = v * 3
      assert.is_true(buf.requires_grad)
      ;(buf * T({ 1, 2, 3, 4 })):sum():backward()
      assert_close(vals(v.grad), { 6, 12 }, 0)
      local x = T({ 1, 2, 3 }, { requires_grad = true })
      local y = x * 2
      y[2] = 0
      y:sum():backward()
      assert_close(vals(x.grad), { 2, 0, 2 }, 0)
    end)

    it("mask writes and index writes", function()
      local x = T({ 1, -2, 3, -4 }, { requires_grad = true })
      local v = T({ 5, 6 }, { requires_grad = true })
      local y = x * 1
      y[x:lt(0)] = v
      assert.are.same({ 1, 5, 3, 6 }, vals(y))
      ;(y * T({ 1, 2, 3, 4 })):sum():backward()
      assert_close(vals(x.grad), { 1, 0, 3, 0 }, 0)
      assert_close(vals(v.grad), { 2, 4 }, 0)
      local a = T({ { 1, 2 }, { 3, 4 }, { 5, 6 } }, { requires_grad = true })
      local r = T({ 7, 8 }, { requires_grad = true })
      local b = a * 1
      b[I({ 3, 1 }, dev)] = r
      ;(b * T({ { 1, 2 }, { 3, 4 }, { 5, 6 } })):sum():backward()
      assert_close(vals(a.grad), { { 0, 0 }, { 3, 4 }, { 0, 0 } }, 0)
      assert_close(vals(r.grad), { 6, 8 }, 0)
    end)

    it("matches central differences on a composite of reads and writes", function()
      local x0 = { 0.3, 1.2, 0.7, 2.1, -0.4, -1.6 }
      local function f(xt)
        local x2 = xt:view(2, 3)
        local y = x2 * 1 -- a fresh tensor: no view of it is alive when it is written
        y[{ {}, 1 }] = x2[{ {}, 3 }] * x2[{ {}, 2 }]
        y[y:lt(0)] = 0.5 -- a constant: no gradient there
        return (y[{ { 1, 2 }, { 1, 3, 2 } }] * y[x2:gt(1)]:sum()):sum()
      end
      local x = T(x0, { dtype = "float64", requires_grad = true })
      f(x):backward()
      local g = vals(x.grad)
      local h = 1e-6
      for i = 1, 6 do
        local p, m = {}, {}
        for j = 1, 6 do p[j], m[j] = x0[j], x0[j] end
        p[i], m[i] = p[i] + h, m[i] - h
        local fp = f(T(p, { dtype = "float64" })):item()
        local fm = f(T(m, { dtype = "float64" })):item()
        assert.is_true(math.abs((fp - fm) / (2 * h) - g[i]) < 1e-5, ("x[%d]: %g vs %g"):format(i, (fp - fm) / (2 * h), g[i]))
      end
    end)

    it("a write after reads of views that are dead but not yet collected is recorded", function()
      local x = T({ 1, 2, 3 }, { requires_grad = true })
      local y = x * 2
      local function peek() return y[{ { 1, 2 } }]:sum():item() end
      assert.are.equal(6, peek()) -- a view of y, dead once peek returns, still uncollected
      y[{ { 1, 2 } }] = 0
      y:masked_fill_(y:gt(5), 1)
      y:sum():backward()
      assert_close(vals(x.grad), { 0, 0, 0 }, 0)
      x.grad = nil
      local z = x * 2
      local alive = z[1]
      z[2] = 0 -- a live view of another element keeps its value and gets its history again
      assert.are.equal(2, alive:item())
      ;(alive * 5 + z:sum()):backward()
      assert_close(vals(x.grad), { 12, 0, 2 }, 0) -- PyTorch's
    end)

    it("index_put_ with accumulate, index_copy_ and masked_scatter_ under autograd", function()
      local x = T({ 1, 2, 3 }, { requires_grad = true })
      local v = T({ 10, 20 }, { requires_grad = true })
      local y = x * 1
      y:index_put_({ I({ 2, 2 }, dev) }, v, true)
      assert.are.same({ 1, 32, 3 }, vals(y))
      ;(y * T({ 1, 2, 3 })):sum():backward()
      assert_close(vals(x.grad), { 1, 2, 3 }, 0)
      assert_close(vals(v.grad), { 2, 2 }, 0)
      local a = T({ { 1, 2 }, { 3, 4 } }, { requires_grad = true })
      local src = T({ { 5, 6 } }, { requires_grad = true })
      local b = a * 1
      b:index_copy_(1, I({ 2 }, dev), src)
      ;(b * T({ { 1, 2 }, { 3, 4 } })):sum():backward()
      assert_close(vals(a.grad), { { 1, 2 }, { 0, 0 } }, 0)
      assert_close(vals(src.grad), { { 3, 4 } }, 0)
      local c = T({ 1, 2, 3 }, { requires_grad = true })
      local s = T({ 7, 8, 9 }, { requires_grad = true })
      local d = c * 1
      d:masked_scatter_(T({ true, false, true }, { dtype = "bool" }), s)
      assert.are.same({ 7, 2, 8 }, vals(d))
      ;(d * T({ 1, 2, 3 })):sum():backward()
      assert_close(vals(c.grad), { 0, 2, 0 }, 0)
      assert_close(vals(s.grad), { 1, 3, 0 }, 0)
    end)

    it("a leaf that requires grad refuses writes outside no_grad, and takes them inside", function()
      local x = T({ 1, 2, 3 }, { requires_grad = true })
      assert_error_has(function() x[{ { 1, 2 } }] = 0 end, "leaf", "no_grad")
      assert_error_has(function() x[x:gt(1)] = 0 end, "leaf")
      wick.no_grad(function() x[{ { 1, 2 } }] = 0 end)
      assert.are.same({ 0, 0, 3 }, vals(x))
    end)
  end)

  describe("masked and index ops", function()
    it("masked_fill broadcasts the mask; masked_fill_ writes in place and returns self", function()
      local x = T({ { 1, 2, 3 }, { 4, 5, 6 } })
      local m = T({ true, false, true }, { dtype = "bool" })
      assert.are.same({ { -1, 2, -1 }, { -1, 5, -1 } }, vals(x:masked_fill(m, -1)))
      assert.are.same({ { 1, 2, 3 }, { 4, 5, 6 } }, vals(x))
      assert.are.same({ { 0, 2, 0 }, { 0, 5, 0 } }, vals(wick.masked_fill(x, m, T(0))))
      assert.are.equal(x, x:masked_fill_(x:gt(4), 0))
      assert.are.same({ { 1, 2, 3 }, { 4, 0, 0 } }, vals(x))
      local inf = x:masked_fill(x:eq(0), -math.huge)
      assert.are.equal(-math.huge, vals(inf)[2][3])
    end)

    it("masked_fill matches where() for every dtype, strided tensors and broadcast masks", function()
      wick.manual_seed(3)
      local base = wick.randn(6, 5, { device = dev }) * 4
      local m = base:gt(0.5)
      for _, dt in ipairs({ "float32", "float64", "float16", "bfloat16", "int64", "int32", "uint8", "bool" }) do
        local x = base:abs():to(dt)
        local want = wick.where(m, wick.tensor(1):to(dt), x)
        assert.are.same(vals(want), vals(x:masked_fill(m, 1)), dt)
        local y = x:clone()
        y:masked_fill_(m, 1)
        assert.are.same(vals(want), vals(y), dt)
      end
      local xt = base:t() -- strided
      local mt = m:t()
      assert.are.same(vals(wick.where(mt, wick.tensor(-2), xt)), vals(xt:masked_fill(mt, -2)))
      local yt = base:clone():t()
      yt:masked_fill_(mt, 7)
      assert.are.same(vals(wick.where(mt, wick.tensor(7), base:t())), vals(yt))
      local row = m[1] -- a broadcast mask (one row for all)
      assert.are.same(vals(wick.where(row, wick.tensor(0), base)), vals(base:masked_fill(row, 0)))
      local x = base:clone():requires_grad_()
      local g = wick.randn(6, 5, { device = dev })
      ;(x:masked_fill(row, 0) * g):sum():backward()
      assert.are.same(vals(wick.where(row, wick.tensor(0), g)), vals(x.grad))
      assert.is_truthy(tostring(x:masked_fill(row, 0).grad_fn):find("MaskedFill", 1, true))
    end)

    it("masked_fill under autograd, with a 0-dim value that requires grad", function()
      local x = T({ 1, 2, 3, 4 }, { requires_grad = true })
      local v = T(2, { requires_grad = true })
      local m = T({ true, false, false, true }, { dtype = "bool" })
      ;(x:masked_fill(m, v) * T({ 1, 2, 3, 4 })):sum():backward()
      assert_close(vals(x.grad), { 0, 2, 3, 0 }, 0)
      assert_close(v.grad:item(), 5, 0)
      x.grad = nil
      local y = x * 1
      y:masked_fill_(m, 0)
      y:sum():backward()
      assert_close(vals(x.grad), { 0, 1, 1, 0 }, 0)
    end)

    it("masked_select broadcasts; masked_scatter_ takes the source's elements in order", function()
      local x = T({ { 1, 2 }, { 3, 4 } })
      assert.are.same({ 2, 4 }, vals(x:masked_select(T({ false, true }, { dtype = "bool" }))))
      assert.are.same({ 3, 4 }, vals(wick.masked_select(x, x:gt(2))))
      local y = T({ { 0, 0 }, { 0, 0 } })
      y:masked_scatter_(T({ { true, false }, { true, true } }, { dtype = "bool" }), T({ 7, 8, 9, 10 }))
      assert.are.same({ { 7, 0 }, { 8, 9 } }, vals(y))
      assert.are.same({ { 1, 5 }, { 3, 6 } }, vals(x:masked_scatter(T({ false, true }, { dtype = "bool" }), T({ 5, 6 }))))
      assert_error_has(function() y:masked_scatter_(y:eq(0), T({})) end, "masked_scatter_", "only 0")
    end)

    it("index_fill_, index_copy_, index_put_ (with accumulate) take 1-based indices", function()
      local x = T({ { 1, 2, 3 }, { 4, 5, 6 } })
      x:index_fill_(2, I({ 1, 3 }, dev), -1)
      assert.are.same({ { -1, 2, -1 }, { -1, 5, -1 } }, vals(x))
      x:index_copy_(1, I({ 2 }, dev), T({ { 7, 8, 9 } }))
      assert.are.same({ { -1, 2, -1 }, { 7, 8, 9 } }, vals(x))
      assert.are.same({ { 0, 0, 0 }, { 7, 8, 9 } }, vals(x:index_fill(1, I({ 1 }, dev), 0)))
      x:index_put_({ I({ 1, 1 }, dev) }, T({ 1, 1, 1 }), true)
      assert.are.same({ { 1, 4, 1 }, { 7, 8, 9 } }, vals(x))
      x:index_put_({ x:gt(7) }, T(0))
      assert.are.same({ { 1, 4, 1 }, { 7, 0, 0 } }, vals(x))
      assert_error_has(function() x:index_copy_(1, I({ 1 }, dev), T({ 1, 2, 3 })) end, "index_copy_", "[1, 3]")
    end)
  end)
end

describe("slicing on the CPU", function() key_cases(nil) end)

describe("slicing on cuda:0", function()
  if wick.cuda.is_available() then
    key_cases("cuda:0")
  else
    it("needs a CUDA GPU", function() pending("wick.cuda.is_available() is false") end)
  end
end)

describe("slicing errors", function()
  local x = wick.arange(12):view(3, 4)
  local function here(err) assert.is_truthy(err:find("slicing_spec.lua:%d+:"), "not at the user's line: " .. err) end

  it("a range past the dimension is an error (Torch7's rule), naming it", function()
    here(assert_error_has(function() return x[{ { 1, 4 } }] end, "range {1, 4}", "dimension 1", "size 3"))
    assert_error_has(function() return x[{ {}, { 0, 2 } }] end, "index 0 is invalid")
    assert_error_has(function() return x[{ { -4, 2 } }] end, "range {-4, 2}")
    assert_error_has(function() return x[{ { 3, 1 } }] end, "ends before it starts")
    assert_error_has(function() x[{ { 2, 5 } }] = 0 end, "range {2, 5}")
  end)

  it("steps must be positive; numbers count from 1 and stay inside", function()
    assert_error_has(function() return x[{ { 1, 3, 0 } }] end, "step", "positive", "got 0")
    assert_error_has(function() return x[{ { 1, 3, -1 } }] end, "step", "got -1")
    here(assert_error_has(function() return x[{ 0 }] end, "index 0 is invalid"))
    assert_error_has(function() return x[{ 4 }] end, "index 4 is out of bounds for dimension 1 with size 3")
    assert_error_has(function() return x[{ 1, -5 }] end, "index -5", "dimension 2")
    assert_error_has(function() return x[{ 1.5 }] end, "integer")
    assert_error_has(function() return x[{ { 1, 2.5 } }] end, "integer")
    assert_error_has(function() x[0] = 1 end, "index 0 is invalid")
  end)

  it("keys of any other kind raise, never a silent nil", function()
    here(assert_error_has(function() return x[true] end, "key must be", "boolean"))
    here(assert_error_has(function() return x.foo end, "tensor has no field or method 'foo'"))
    assert_error_has(function() x.shape = 1 end, "cannot set field 'shape' of a tensor (read-only)")
    assert_error_has(function() x.view = 1 end, "cannot set field 'view' of a tensor (a method)")
    assert_error_has(function() return x[{ { 1, 2, 1, 1 } }] end, "a table of 4 elements")
    assert.is_true(x[{ { 1 } }]:equal(x[{ { 1, 1 } }])) -- ({i}: Torch7's {i, i}, Python's x[[0]])
    assert_error_has(function() return x[{ 1, 1, 1 }] end, "too many indices for tensor of dimension 2")
    assert_error_has(function() return x[{ "a" }] end, "entry 1", "string")
    assert_error_has(function() return x[{ dim = 1 }] end, "entries 1..n", "dim")
    local i1 = wick.tensor({ 1 }, { dtype = "int64" })
    assert_error_has(function() return x[{ {}, wick.tensor({ 1.5 }) }] end, "entry 2", "int64 or int32 index tensor or a bool mask", "float32")
    assert_error_has(function() return x[{ wick.tensor({ true, false }), i1 }] end, "the mask's size 2 does not match the tensor's 3 at dim 1")
    assert_error_has(function() return x[{ {}, wick.tensor({ true }) }] end, "mask's size 1", "tensor's 4 at dim 2")
    assert_error_has(function() return x:view(3, 2, 2)[{ x:view(3, 2, 2)[{ {}, {}, 1 }]:gt(2), 1 }] end, "must be the key's last entry")
    assert_error_has(function() return x[{ {}, i1 * 5 }] end, "index 5 is out of bounds for dimension 2 with size 4")
    assert_error_has(function() return x[wick.tensor({ 1 })] end, "bool mask or an int64 index", "float32")
    assert_error_has(function() return x[x:gt(2):view(12)] end, "shape of the mask", "[12]")
    assert_error_has(function() return x[wick.tensor({ 0 }, { dtype = "int64" })] end, "index 0 is invalid")
    assert_error_has(function() return x[wick.tensor({ 4 }, { dtype = "int64" })] end, "index 4 is out of bounds")
    assert_error_has(function() x[1] = "a" end, "expected a number or a tensor", "string")
    assert_error_has(function() return wick.tensor(3)[{ 1 }] end, "too many indices")
  end)

  it("a failed write leaves the tensor untouched", function()
    local y = wick.arange(6):view(2, 3)
    assert_error_has(function() y[{ {}, { 1, 2 } }] = wick.ones(3) end, "shape mismatch")
    assert_error_has(function() y[y:gt(2)] = wick.ones(2) end, "shape mismatch")
    assert_error_has(function() y[wick.tensor({ 1, 3 }, { dtype = "int64" })] = 0 end, "out of bounds")
    assert.are.same({ { 0, 1, 2 }, { 3, 4, 5 } }, y:totable())
  end)
end)

describe("slicing on the meta device (shapes only)", function()
  it("views, index tensors and writes know their shapes", function()
    local x = wick.empty(6, 4, 2, { device = "meta" })
    assert.are.same({ 6, 2 }, shape_of(x[{ {}, -1 }]))
    assert.are.same({ 3, 4, 2 }, shape_of(x[{ { 1, -1, 2 } }]))
    assert.are.same({ 2, 2 }, shape_of(x[{ { 2, 3 }, 4 }]))
    assert.are.same({ 3, 4, 2 }, shape_of(x[wick.tensor({ 1, 2, 3 }, { dtype = "int64", device = "meta" })]))
    x[{ {}, 1 }] = 0
    x[{ {}, 1 }] = wick.empty(2, { device = "meta" })
    assert_error_has(function() x[{ {}, 1 }] = wick.empty(3, { device = "meta" }) end, "shape mismatch")
    assert_error_has(function() return x[{ { 1, 7 } }] end, "range {1, 7}")
    local m = wick.empty(6, 4, 2, { device = "meta", dtype = "bool" })
    assert_error_has(function() return x[m] end, "meta")
    x[m] = 1
  end)
end)

describe("a range's error after '...' in a key", function()
  it("names the key's own entry and the range as written (Swin's x[..., 0::2, 0::2, :] ported 0-based)", function()
    local x = wick.randn(2, 3, 4, 5)
    assert_error_has(function() return x[{ "...", { 0, -1, 2 } }] end, "range {0, -1, 2}, entry 2 of the key")
    assert_error_has(function() return x[{ 1, { 1, 9 } }] end, "the range {1, 9} reaches past dimension 2 of size 3")
  end)
end)
