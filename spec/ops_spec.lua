-- The ops a transformer script uses (issue 13, item 2): tril/triu, split/chunk,
-- sort/argsort/topk, cumsum/cumprod, multinomial, randint/randperm, clamp and
-- where forms, einsum, in-place random fills. Values against brute-force Lua
-- references, gradients numerically, 1-based indices, errors, empty and meta
-- tensors, and the same results on cuda:0 when a GPU is there.
local wick = require("wick")
local support = require("spec.support")
local assert_close = support.assert_close
local assert_error_has = support.assert_error_has
local gradcheck = support.gradcheck
local I = support.I
local shape_of = support.shape_of

local function D(values) return wick.tensor(values, { dtype = "float64" }) end

-- a reproducible table of n pseudo-random numbers, with repeats when `levels` is small
local function numbers(n, seed, levels)
  local out, x = {}, seed
  for i = 1, n do
    x = (x * 1103515245 + 12345) % 2147483648
    out[i] = levels and (x % levels) or (x / 2147483648 - 0.5) * 10
  end
  return out
end

-- brute-force stable sort of a Lua array: values and 1-based positions
local function ref_sort(vals, descending)
  local idx = {}
  for i = 1, #vals do idx[i] = i end
  table.sort(idx, function(a, b)
    local x, y = vals[a], vals[b]
    local xn, yn = x ~= x, y ~= y
    if descending then
      if xn ~= yn then return xn end -- NaN first
      if not xn and x ~= y then return x > y end
    else
      if xn ~= yn then return yn end -- NaN last
      if not xn and x ~= y then return x < y end
    end
    return a < b
  end)
  local v = {}
  for i = 1, #idx do v[i] = vals[idx[i]] end
  return v, idx
end

describe("tril and triu", function()
  it("keep the elements on and below (above) diagonal k, batched too", function()
    local x = wick.arange(1, 2 * 3 * 4 + 1):view(2, 3, 4)
    local v = x:totable()
    for k = -3, 4 do
      local lo, up = x:tril(k):totable(), wick.triu(x, k):totable()
      for b = 1, 2 do
        for i = 1, 3 do
          for j = 1, 4 do
            assert.are.equal(j - i <= k and v[b][i][j] or 0, lo[b][i][j], ("tril k=%d"):format(k))
            assert.are.equal(j - i >= k and v[b][i][j] or 0, up[b][i][j], ("triu k=%d"):format(k))
          end
        end
      end
    end
    assert.are.same({ { 1, 0 }, { 1, 1 } }, wick.ones(2, 2):tril():totable())
    assert.are.same({ { 0, 1 }, { 0, 0 } }, wick.ones(2, 2):triu({ diagonal = 1 }):totable())
  end)
  it("keeps the dtype, works in place, on empty and meta tensors", function()
    local b = wick.ones(3, 3, { dtype = "int64" }):triu(1)
    assert.are.equal("int64", b.dtype)
    assert.are.same({ { 0, 1, 1 }, { 0, 0, 1 }, { 0, 0, 0 } }, b:totable())
    local t = wick.ones(2, 2)
    t:tril_()
    assert.are.same({ { 1, 0 }, { 1, 1 } }, t:totable())
    assert.are.same({ 0, 3 }, shape_of(wick.zeros(0, 3):tril()))
    local m = wick.ones(4, 5, { device = "meta" }):triu(2)
    assert.are.same({ 4, 5 }, shape_of(m))
    assert.are.equal("meta", m.device.type)
  end)
  it("has a gradient (zero where masked)", function()
    gradcheck(function(a) return a:tril(-1) end, { D({ { 1, 2, 3 }, { 4, 5, 6 }, { 7, 8, 9 } }) })
    gradcheck(function(a) return a:triu(1) end, { D({ { 1, 2, 3 }, { 4, 5, 6 } }) })
    local a = wick.ones(2, 2, { requires_grad = true })
    a:tril():sum():backward()
    assert.are.same({ { 1, 0 }, { 1, 1 } }, a.grad:totable())
  end)
  it("raises for fewer than 2 dimensions and a bad diagonal", function()
    assert_error_has(function() return wick.ones(3):tril() end, "tril: input tensor must have at least 2 dimensions")
    assert_error_has(function() return wick.ones(3, 3):triu(1.5) end, "triu: expected an integer for argument 'diagonal'")
  end)
end)

describe("split and chunk", function()
  local x = wick.arange(10):view(5, 2)
  it("split by size gives views, the last one shorter", function()
    local parts = x:split(2)
    assert.are.equal(3, #parts)
    assert.are.same({ { 0, 1 }, { 2, 3 } }, parts[1]:totable())
    assert.are.same({ { 8, 9 } }, parts[3]:totable())
    assert.is_true(parts[2]:is_same_storage(x))
    local cols = wick.split(x, 1, 2)
    assert.are.equal(2, #cols)
    assert.are.same({ 5, 1 }, shape_of(cols[2]))
    assert.are.same({ { 1 }, { 3 }, { 5 }, { 7 }, { 9 } }, cols[2]:totable())
  end)
  it("split by a table of sizes; sizes that do not sum raise", function()
    local parts = x:split({ 1, 4 })
    assert.are.same({ { 0, 1 } }, parts[1]:totable())
    assert.are.same({ 4, 2 }, shape_of(parts[2]))
    assert.are.same({ 0, 2 }, shape_of(x:split({ 0, 5 })[1]))
    assert_error_has(function() return x:split({ 2, 2 }) end, "split_sizes to sum exactly to 5")
    assert_error_has(function() return x:split({ 2, -1, 4 }) end, "split")
    assert_error_has(function() return x:split(0) end, "split_size can only be 0 if dimension size is 0")
    assert_error_has(function() return x:split(2, 3) end, "dimension 3 out of range")
  end)
  it("chunk gives at most n chunks of ceil(size / n), like PyTorch", function()
    local function sizes(t, n, dim)
      local s = {}
      for i, p in ipairs(t:chunk(n, dim)) do s[i] = p:size(dim or 1) end
      return s
    end
    assert.are.same({ 2, 2, 1 }, sizes(x, 3))
    assert.are.same({ 2, 2, 2 }, sizes(wick.zeros(6), 4)) -- 3 chunks, as torch.chunk gives
    assert.are.same({ 1, 1 }, sizes(x, 5, 2))
    assert.are.same({ 0 }, sizes(wick.zeros(0), 2))
    assert_error_has(function() return x:chunk(0) end, "chunk: argument 'chunks' must be a positive integer")
  end)
  it("carries gradients back through the views", function()
    gradcheck(function(a)
      local p = a:split({ 1, 2 }, 2)
      return p[2] * 2 + p[1]
    end, { D({ { 1, 2, 3 }, { 4, 5, 6 } }) })
    gradcheck(function(a) return a:chunk(2)[2] end, { D({ 1, 2, 3, 4 }) })
  end)
  it("take the dim as an option too, as PyTorch's keyword", function()
    assert.are.same({ 5, 1 }, shape_of(x:split(1, { dim = 2 })[2]))
    assert.are.equal(2, #x:chunk(2, { dim = 2 }))
    assert.are.equal(2, #x:unbind({ dim = -1 }))
    assert_error_has(function() return x:split(1, { dims = 2 }) end, "split: unknown option 'dims'")
  end)
  it("unbind gives the slices", function()
    local u = x:unbind(2)
    assert.are.equal(2, #u)
    assert.are.same({ 1, 3, 5, 7, 9 }, u[2]:totable())
  end)
  it("works on meta tensors", function()
    local parts = wick.empty(7, 3, { device = "meta" }):split(3)
    assert.are.equal(3, #parts)
    assert.are.same({ 1, 3 }, shape_of(parts[3]))
  end)
end)

describe("sort, argsort, topk", function()
  it("matches a brute-force stable sort, ascending and descending, with 1-based indices", function()
    for _, n in ipairs({ 1, 2, 7, 64, 1000 }) do
      for _, levels in ipairs({ false, 3 }) do
        local vals = numbers(n, n + 11, levels or nil)
        local t = wick.tensor(vals, { dtype = "float64" })
        for _, desc in ipairs({ false, true }) do
          local ev, ei = ref_sort(vals, desc)
          local v, i = t:sort(1, desc)
          assert.are.equal("int64", i.dtype)
          assert.are.same(ev, v:totable())
          assert.are.same(ei, i:totable())
          local _, i2 = t:sort({ descending = desc, stable = true })
          assert.are.same(ei, i2:totable())
        end
      end
    end
  end)
  it("puts NaN last ascending and first descending; sorts int64 exactly", function()
    local nan = 0 / 0
    local v, i = wick.tensor({ 2, nan, -1, 2 }):sort()
    local got = v:totable()
    assert.are.same({ -1, 2, 2 }, { got[1], got[2], got[3] })
    assert.is_true(got[4] ~= got[4])
    assert.are.same({ 3, 1, 4, 2 }, i:totable())
    local vd = wick.tensor({ 2, nan, -1 }):sort(1, true):totable()
    assert.is_true(vd[1] ~= vd[1])
    local big = wick.tensor({ 2 ^ 53 + 2, 2 ^ 53, 3 }, { dtype = "int64" })
    local bv, bi = big:sort()
    assert.are.equal("int64", bv.dtype)
    assert.are.same({ 3, 2, 1 }, bi:totable())
    assert.are.equal("9007199254740994", bv[3]:_int64_str())
  end)
  it("sorts along any dim of a 3-D tensor; indices gather the values back", function()
    local vals = numbers(2 * 3 * 4, 5)
    local t = wick.tensor(vals):view(2, 3, 4)
    for _, dim in ipairs({ 1, 2, 3, -1 }) do
      local v, i = t:sort(dim, true)
      assert.is_true(t:gather(dim, i):equal(v))
      -- non-increasing along dim
      local n = t:size(dim)
      if n > 1 then
        local d = v:narrow(dim, 1, n - 1) - v:narrow(dim, 2, n - 1)
        assert.is_true(d:ge(0):all())
      end
    end
    -- a non-contiguous input
    local v = t:transpose(1, 3):sort(2)
    assert.is_true(v:equal(t:transpose(1, 3):contiguous():sort(2)))
  end)
  it("handles empty, 0-dim and meta tensors", function()
    local v, i = wick.zeros(0):sort()
    assert.are.same({ 0 }, shape_of(v))
    assert.are.same({ 0 }, shape_of(i))
    local sv, si = wick.tensor(3.5):sort()
    assert.are.equal(3.5, sv:item())
    assert.are.equal(1, si:item())
    local mv, mi = wick.empty(3, 4, { device = "meta" }):sort(1)
    assert.are.same({ 3, 4 }, shape_of(mv))
    assert.are.equal("int64", mi.dtype)
    assert.are.equal("meta", mi.device.type)
  end)
  it("has a gradient for the values (scattered back through the indices)", function()
    gradcheck(function(a) return (a:sort(2, true)) end, { D({ { 3, 1, 2 }, { -1, 5, 0 } }) })
    gradcheck(function(a) return (a:sort(1)) end, { D({ { 3, 1 }, { -1, 5 }, { 0, 2 } }) })
    gradcheck(function(a) return (a:topk(2)) end, { D({ { 3, 1, 2 }, { -1, 5, 0 } }) })
  end)
  it("raises on a bad dim and bad options", function()
    local t = wick.ones(2, 3)
    assert_error_has(function() return t:sort(3) end, "sort: dimension 3 out of range")
    assert_error_has(function() return t:sort({ descend = true }) end, "sort: unknown option 'descend'")
    assert_error_has(function() return t:sort(1, "yes") end, "sort: expected a boolean for argument 'descending'")
  end)
  it("argsort is the indices of sort", function()
    local t = wick.tensor({ 3, 1, 2 })
    assert.are.same({ 2, 3, 1 }, t:argsort():totable())
    assert.are.same({ 1, 3, 2 }, wick.argsort(t, 1, true):totable())
  end)
  it("topk gives the k largest (or smallest) with 1-based indices", function()
    local vals = numbers(50, 3)
    local t = wick.tensor(vals, { dtype = "float64" })
    local ev, ei = ref_sort(vals, true)
    local v, i = t:topk(5)
    for j = 1, 5 do
      assert.are.equal(ev[j], v[j]:item())
      assert.are.equal(ei[j], i[j]:item())
    end
    local sv = t:topk(3, 1, false)
    local av = ref_sort(vals)
    assert.are.same({ av[1], av[2], av[3] }, sv:totable())
    local m = wick.tensor({ { 1, 9, 3 }, { 7, 2, 8 } })
    local mv, mi = m:topk(1, { dim = 1 })
    assert.are.same({ { 7, 9, 8 } }, mv:totable())
    assert.are.same({ { 2, 1, 2 } }, mi:totable())
    assert.are.same({ 2, 0 }, shape_of(m:topk(0)))
  end)
  it("topk selects by position among ties, small k (a heap) and large k (a sort) alike", function()
    for _, case in ipairs({ { 1000, 3, 5 }, { 1000, 3, 400 }, { 64, false, 7 }, { 9, 2, 9 } }) do
      local n, levels, k = case[1], case[2], case[3]
      local vals = numbers(n, n + k, levels or nil)
      local t = wick.tensor(vals, { dtype = "float64" })
      for _, largest in ipairs({ true, false }) do
        local ev, ei = ref_sort(vals, largest)
        local v, i = t:topk(k, 1, largest)
        for j = 1, k do
          assert.are.equal(ev[j], v[j]:item())
          assert.are.equal(ei[j], i[j]:item())
        end
      end
    end
    -- along a dim with other dims after it
    local m = wick.tensor(numbers(40 * 3, 8, 5)):view(40, 3)
    local v, i = m:topk(3, 1)
    local sv, si = m:sort(1, true)
    assert.is_true(v:equal(sv:narrow(1, 1, 3)))
    assert.is_true(i:equal(si:narrow(1, 1, 3)))
  end)
  it("topk raises when k exceeds the size", function()
    assert_error_has(function() return wick.ones(2, 3):topk(4) end, "topk: selected index k out of range")
    assert_error_has(function() return wick.ones(3):topk(-1) end, "topk: argument 'k' must be a non-negative integer")
    assert_error_has(function() return wick.ones(3):topk(1, { bogus = 1 }) end, "topk: unknown option 'bogus'")
  end)
end)

describe("cumsum and cumprod", function()
  it("match Lua loops along each dim", function()
    local vals = numbers(2 * 3 * 4, 9)
    local t = wick.tensor(vals, { dtype = "float64" }):view(2, 3, 4)
    local v = t:totable()
    for _, dim in ipairs({ 1, 2, 3 }) do
      local s, p = t:cumsum(dim):totable(), wick.cumprod(t, dim):totable()
      for a = 1, 2 do
        for b = 1, 3 do
          for c = 1, 4 do
            local idx = { a, b, c }
            local acc, prod = 0, 1
            for k = 1, idx[dim] do
              local at = { a, b, c }
              at[dim] = k
              acc = acc + v[at[1]][at[2]][at[3]]
              prod = prod * v[at[1]][at[2]][at[3]]
            end
            assert(math.abs(s[a][b][c] - acc) <= 1e-12 * (1 + math.abs(acc)), "cumsum")
            assert(math.abs(p[a][b][c] - prod) <= 1e-12 * (1 + math.abs(prod)), "cumprod")
          end
        end
      end
    end
  end)
  it("give int64 for integral inputs and take a dtype", function()
    local i = wick.tensor({ 1, 2, 3 }, { dtype = "int32" }):cumsum(1)
    assert.are.equal("int64", i.dtype)
    assert.are.same({ 1, 3, 6 }, i:totable())
    assert.are.same({ 1, 1, 2 }, wick.tensor({ true, false, true }):cumsum(1):totable())
    local f = wick.tensor({ 1, 2, 3 }, { dtype = "int64" }):cumprod(1, { dtype = "float64" })
    assert.are.equal("float64", f.dtype)
    assert.are.same({ 1, 2, 6 }, f:totable())
    assert.are.equal("float16", wick.ones(3, { dtype = "float16" }):cumsum(-1).dtype)
  end)
  it("handle empty, 0-dim and meta tensors", function()
    assert.are.same({ 0, 3 }, shape_of(wick.zeros(0, 3):cumsum(1)))
    assert.are.equal(2.5, wick.tensor(2.5):cumsum(1):item())
    local m = wick.empty(3, 4, { device = "meta" }):cumprod(2)
    assert.are.same({ 3, 4 }, shape_of(m))
    assert.are.equal("meta", m.device.type)
  end)
  it("have gradients (cumprod for inputs without zeros)", function()
    gradcheck(function(a) return a:cumsum(2) end, { D({ { 1, 2, 3 }, { 4, 5, 6 } }) })
    gradcheck(function(a) return a:cumsum(1) end, { D({ { 1, 2, 3 }, { 4, 5, 6 } }) })
    gradcheck(function(a) return a:cumprod(2) end, { D({ { 1.5, -2, 0.5 }, { 3, 0.25, -1 } }) })
    local a = wick.tensor({ 1, 2, 3 }, { requires_grad = true })
    a:cumsum(1):sum():backward()
    assert.are.same({ 3, 2, 1 }, a.grad:totable())
  end)
  it("have in-place forms", function()
    local t = wick.tensor({ 1, 2, 3 })
    assert.are.equal(t, t:cumsum_(1))
    assert.are.same({ 1, 3, 6 }, t:totable())
    t:cumprod_(1)
    assert.are.same({ 1, 3, 18 }, t:totable())
  end)
  it("raise without a dim or with a bad one", function()
    assert_error_has(function() return wick.ones(3):cumsum() end, "cumsum: missing argument 'dim'")
    assert_error_has(function() return wick.ones(3):cumprod(2) end, "cumprod: dimension 2 out of range")
    assert_error_has(function() return wick.ones(3):cumsum(1, { dtype = "nope" }) end, "cumsum")
    assert_error_has(function() return wick.ones(3):cumsum(1, { bogus = 1 }) end, "cumsum: unknown option 'bogus'")
  end)
end)

describe("multinomial", function()
  it("samples with replacement in proportion to the weights (1-based, seeded)", function()
    wick.manual_seed(123)
    local n = 20000
    local s = wick.multinomial(wick.tensor({ 1, 0, 2, 7 }), n, true)
    assert.are.equal("int64", s.dtype)
    assert.are.same({ n }, shape_of(s))
    local counts = { 0, 0, 0, 0 }
    for _, v in ipairs(s:totable()) do counts[v] = counts[v] + 1 end
    assert.are.equal(0, counts[2]) -- a zero weight is never drawn
    assert.is_true(math.abs(counts[1] / n - 0.1) < 0.015, tostring(counts[1]))
    assert.is_true(math.abs(counts[3] / n - 0.2) < 0.015, tostring(counts[3]))
    assert.is_true(math.abs(counts[4] / n - 0.7) < 0.015, tostring(counts[4]))
    wick.manual_seed(123)
    assert.is_true(s:equal(wick.multinomial(wick.tensor({ 1, 0, 2, 7 }), n, true)))
    -- trailing and leading zero weights are never drawn, whatever the rounding of the sums
    local z = wick.multinomial(wick.tensor({ { 0, 0.1, 0.2, 0.7, 0, 0 }, { 0, 0, 1e-30, 0, 0, 0 } }, { dtype = "float64" }), 5000, true)
    assert.is_true(z[1]:ge(2):all() and z[1]:le(4):all())
    assert.is_true(z[2]:eq(3):all())
  end)
  it("samples without replacement: distinct categories, heavy ones first more often", function()
    wick.manual_seed(7)
    local p = wick.tensor({ { 0.1, 0.6, 0, 0.3 }, { 1, 1, 1, 1 } })
    local first = 0
    for _ = 1, 400 do
      local s = p:multinomial(3)
      assert.are.same({ 2, 3 }, shape_of(s))
      for r = 1, 2 do
        local seen = {}
        for _, v in ipairs(s[r]:totable()) do
          assert.is_nil(seen[v])
          seen[v] = true
          assert.is_true(v >= 1 and v <= 4)
        end
        if r == 1 then assert.is_nil(seen[3]) end
      end
      if s[1][1]:item() == 2 then first = first + 1 end
    end
    assert.is_true(math.abs(first / 400 - 0.6) < 0.1, tostring(first))
    -- one sample per row, as a sampling loop draws the next token
    local one = wick.multinomial(wick.tensor({ { 0, 1 }, { 1, 0 } }), 1)
    assert.are.same({ { 2 }, { 1 } }, one:totable())
    local kw = wick.multinomial(wick.tensor({ { 0, 1 }, { 1, 0 } }), { num_samples = 2, replacement = true })
    assert.are.same({ { 2, 2 }, { 1, 1 } }, kw:totable())
  end)
  it("raises on invalid probabilities and impossible requests", function()
    local bad = "probability tensor contains either `inf`, `nan` or element < 0"
    assert_error_has(function() return wick.multinomial(wick.tensor({ 0.5, -0.1 }), 1) end, bad)
    assert_error_has(function() return wick.multinomial(wick.tensor({ 0.5, 0 / 0 }), 1) end, bad)
    assert_error_has(function() return wick.multinomial(wick.tensor({ 0.5, math.huge }), 1, true) end, bad)
    assert_error_has(function() return wick.multinomial(wick.tensor({ { 1, 1 }, { 0, 0 } }), 1) end,
      "invalid multinomial distribution (sum of probabilities <= 0)")
    assert_error_has(function() return wick.multinomial(wick.tensor({ 1, 1 }), 3) end,
      "cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    assert_error_has(function() return wick.multinomial(wick.tensor({ 1, 0, 1 }), 3) end,
      "not enough non-negative category to sample")
    assert_error_has(function() return wick.multinomial(wick.ones(2, 2, 2), 1) end, "prob_dist must be 1 or 2 dim")
    assert_error_has(function() return wick.multinomial(wick.ones(2), 0) end, "argument 'num_samples' must be a positive integer")
    assert_error_has(function() return wick.multinomial(I({ 1, 2 }), 1) end, "only supports floating-point dtypes")
  end)
  it("gives shapes on meta", function()
    local m = wick.multinomial(wick.empty(3, 5, { device = "meta" }), 2)
    assert.are.same({ 3, 2 }, shape_of(m))
    assert.are.equal("meta", m.device.type)
  end)
end)

describe("randint and randperm", function()
  it("randint draws integers in [low, high), both forms, repeatable", function()
    wick.manual_seed(11)
    local t = wick.randint(3, 7, { 5000 })
    assert.are.equal("int64", t.dtype)
    local counts = {}
    for _, v in ipairs(t:totable()) do
      assert.is_true(v >= 3 and v <= 6, tostring(v))
      counts[v] = (counts[v] or 0) + 1
    end
    for v = 3, 6 do assert.is_true(math.abs(counts[v] / 5000 - 0.25) < 0.03, tostring(counts[v])) end
    wick.manual_seed(11)
    assert.is_true(t:equal(wick.randint(3, 7, { 5000 })))
    local h = wick.randint(2, { 2, 3 }, { dtype = "float32" })
    assert.are.same({ 2, 3 }, shape_of(h))
    assert.are.equal("float32", h.dtype)
    assert.is_true(h:ge(0):all() and h:le(1):all())
    assert.is_true(wick.randint(-5, -4, { 10 }):eq(-5):all())
  end)
  it("randint_like and normal follow their input", function()
    wick.manual_seed(1)
    local base = wick.zeros(3, 4, { dtype = "int32" })
    local r = wick.randint_like(base, 5)
    assert.are.equal("int32", r.dtype)
    assert.are.same({ 3, 4 }, shape_of(r))
    assert.is_true(r:ge(0):all() and r:le(4):all())
    assert.is_true(wick.randint_like(base, 7, 8):eq(7):all())
    local n = wick.normal(3, 0.5, { 20000 })
    assert.is_true(math.abs(n:mean():item() - 3) < 0.02 and math.abs(n:std():item() - 0.5) < 0.02)
    local m = wick.normal(wick.tensor({ 0, 100 }), wick.tensor({ 1e-6, 1e-6 }))
    assert_close(m, { 0, 100 }, 1e-4)
    assert.are.same({ 2, 3 }, shape_of(wick.normal(wick.zeros(2, 1), wick.ones(1, 3))))
    assert_error_has(function() return wick.normal(0, 1) end, "normal: expected a table for argument 'size'")
    assert_error_has(function() return wick.normal(0, -1, { 2 }) end, "normal: argument 'std' must be between 0")
  end)
  it("randint raises on an empty range and bad arguments", function()
    assert_error_has(function() return wick.randint(5, 5, { 2 }) end, "random_ expects 'from' to be less than 'to', but got from=5 >= to=5")
    assert_error_has(function() return wick.randint(1.5, { 2 }) end, "randint: expected an integer for argument 'high'")
    assert_error_has(function() return wick.randint(3, { 2 }, { bogus = 1 }) end, "randint: unknown option 'bogus'")
  end)
  it("randperm is a repeatable permutation of 1..n", function()
    wick.manual_seed(3)
    local p = wick.randperm(100)
    assert.are.equal("int64", p.dtype)
    local seen = {}
    for _, v in ipairs(p:totable()) do seen[v] = (seen[v] or 0) + 1 end
    for i = 1, 100 do assert.are.equal(1, seen[i]) end
    wick.manual_seed(3)
    assert.is_true(p:equal(wick.randperm(100)))
    assert.are.same({ 0 }, shape_of(wick.randperm(0)))
    assert.are.equal("float64", wick.randperm(3, { dtype = "float64" }).dtype)
    -- the loader's shuffling still gives permutations
    local q = wick.data.randperm(10)
    table.sort(q)
    for i = 1, 10 do assert.are.equal(i, q[i]) end
  end)
end)

describe("clamp and where", function()
  local x = wick.tensor({ -2, -0.5, 0.5, 2 })
  it("clamp takes only a min, only a max, or tensor bounds", function()
    assert.are.same({ -1, -0.5, 0.5, 2 }, x:clamp(-1):totable())
    assert.are.same({ -2, -0.5, 0.5, 1 }, x:clamp(nil, 1):totable())
    assert.are.same({ -2, -0.5, 0.5, 1 }, x:clamp({ max = 1 }):totable())
    assert.are.same({ 0, 0, 0.5, 2 }, x:clamp_min(0):totable())
    assert.are.same({ -2, -0.5, 0, 0 }, wick.clamp_max(x, 0):totable())
    local lo, hi = wick.tensor({ -1, 0, 0, 0 }), wick.tensor({ 1, 1, 0.25, 3 })
    assert.are.same({ -1, 0, 0.25, 2 }, x:clamp(lo, hi):totable())
    assert.are.same({ -1, 0, 0.5, 2 }, x:clamp_min(lo):totable())
    assert.are.same({ -1, -0.5, 0.25, 2 }, x:clamp(-1, hi):totable())
    local y = x:clone()
    y:clamp_(lo, 1)
    assert.are.same({ -1, 0, 0.5, 1 }, y:totable())
    assert_error_has(function() return x:clamp() end, "at least one of min and max must be given")
    assert_error_has(function() return x:clamp_min() end, "clamp_min: expected a number or a tensor for argument 'min'")
  end)
  it("clamp has gradients for the input and tensor bounds", function()
    gradcheck(function(a) return a:clamp(-1, 1) end, { D({ -2, -0.5, 0.5, 2 }) })
    gradcheck(function(a, lo) return a:clamp_min(lo) end, { D({ -2, -0.5, 0.5, 2 }), D({ -1, 0, 0, 3 }) })
  end)
  it("where takes numbers on either side, with a gradient", function()
    local c = x:gt(0)
    assert.are.same({ 0, 0, 0.5, 2 }, wick.where(c, x, 0):totable())
    assert.are.same({ -2, -0.5, 9, 9 }, wick.where(c, 9, x):totable())
    assert.are.same({ 0, 0, 1, 1 }, wick.where(c, 1, 0):totable())
    assert.are.same({ 7, 7, 0.5, 2 }, x:where(c, 7):totable())
    gradcheck(function(a, b) return wick.where(D({ 1, 0, 1 }):gt(0), a, b) end, { D({ 1, 2, 3 }), D({ 4, 5, 6 }) })
  end)
end)

describe("einsum", function()
  local function rand(...) return wick.randn({ ... }, { dtype = "float64" }) end
  it("computes matrix products, batches, transposes, outer products and sums", function()
    wick.manual_seed(2)
    local a, b = rand(3, 4), rand(4, 5)
    assert_close(wick.einsum("ij,jk->ik", a, b), a:mm(b):totable(), 1e-12)
    assert_close(wick.einsum("ij,jk", a, b), a:mm(b):totable(), 1e-12) -- implicit output
    assert_close(wick.einsum("ij->ji", a), a:t():totable())
    assert_close(wick.einsum("ij->", a), a:sum():item(), 1e-12)
    assert_close(wick.einsum("ij->j", a), a:sum(1):totable(), 1e-12)
    local u, v = rand(3), rand(4)
    assert_close(wick.einsum("i,j->ij", u, v), u:view(3, 1):mm(v:view(1, 4)):totable(), 1e-12)
    assert_close(wick.einsum("i,i->", u, u), (u * u):sum():item(), 1e-12)
    local q, k = rand(2, 3, 5, 4), rand(2, 3, 6, 4)
    local att = wick.einsum("bhqd,bhkd->bhqk", q, k)
    assert.are.same({ 2, 3, 5, 6 }, shape_of(att))
    assert_close(att, q:matmul(k:transpose(3, 4)):totable(), 1e-12)
    local x, y = rand(2, 3, 4), rand(2, 4, 5)
    assert_close(wick.einsum("bij,bjk->bik", x, y), x:bmm(y):totable(), 1e-12)
    assert_close(wick.einsum("bij,bjk->bki", { x, y }), x:bmm(y):transpose(2, 3):totable(), 1e-12)
    local c = rand(5, 2)
    assert_close(wick.einsum("ij,jk,kl->il", a, b, c), a:mm(b):mm(c):totable(), 1e-12)
  end)
  it("spells batch dims as '...' (right-aligned)", function()
    wick.manual_seed(4)
    local x, y = rand(2, 3, 4), rand(2, 4, 5)
    assert_close(wick.einsum("...ij,...jk->...ik", x, y), x:bmm(y):totable(), 1e-12)
    assert_close(wick.einsum("...ij,...jk", x, y), x:bmm(y):totable(), 1e-12)
    assert_close(wick.einsum("...ij->...ji", x), x:transpose(2, 3):totable())
    assert_close(wick.einsum("b...->b", x), x:sum(3):sum(2):totable(), 1e-12)
    local w = rand(4, 6)
    assert_close(wick.einsum("...j,jk->...k", x, w), x:matmul(w):totable(), 1e-12)
    assert_close(wick.einsum("ij...->...", x), x:sum(1):sum(1):totable(), 1e-12)
  end)
  it("has gradients", function()
    gradcheck(function(a, b) return wick.einsum("ij,jk->ik", a, b) end, { D({ { 1, 2 }, { 3, 4 } }), D({ { 1, -1, 2 }, { 0, 3, 1 } }) })
    gradcheck(function(a, b) return wick.einsum("bqd,bkd->bqk", a, b) end,
      { D({ { { 1, 2 }, { 3, 4 } } }), D({ { { 1, -1 }, { 0, 3 }, { 2, 2 } } }) })
    gradcheck(function(a) return wick.einsum("ij->ji", a) end, { D({ { 1, 2, 3 }, { 4, 5, 6 } }) })
  end)
  it("takes a diagonal for a subscript repeated in an operand ('ii->i', 'ii' a trace, 'NMKK->NM')", function()
    local A = wick.arange(1, 10):view(3, 3)
    assert.are.same({ 1, 5, 9 }, wick.einsum("ii->i", A):tolist())
    assert.are.equal(15, wick.einsum("ii", A):item())
    assert.are.same({ 38, 83, 128 }, wick.einsum("ij,jj->i", A, A):tolist())
    local R = wick.randn(2, 3, 4, 4)
    assert.is_true((wick.einsum("NMKK->NM", R) - R:diagonal(0, 3, 4):sum(-1)):abs():max():item() < 1e-6)
    local list = { A }
    wick.einsum("ii->i", list)
    assert.is_true(rawequal(list[1], A)) -- the operands' table is left as it was
  end)

  it("raises on bad equations, naming the problem", function()
    local a = wick.ones(2, 3)
    assert_error_has(function() return wick.einsum("ij,jk->ik", a) end, "names 2 operand(s) but 1 tensor(s) were given")
    assert_error_has(function() return wick.einsum("ijk->i", a) end, "operand 1 has 2 dimension(s) but its subscripts 'ijk' name 3")
    assert_error_has(function() return wick.einsum("ij,ik->jk", a, wick.ones(3, 2)) end, "subscript 'i' has size 3 in operand 2 but size 2")
    assert_error_has(function() return wick.einsum("ii->i", wick.ones(2, 3)) end,
      "subscript 'i' is repeated in operand 1 ('ii') for dimensions of sizes 2 and 3")
    assert_error_has(function() return wick.einsum("i1->i", a) end, "invalid subscript '1'")
    assert_error_has(function() return wick.einsum("ij->k", a) end, "output subscript 'k' does not appear in any input")
    assert_error_has(function() return wick.einsum("ij->ii", a) end, "output subscript 'i' appears more than once")
    assert_error_has(function() return wick.einsum("..ij->ij", a) end, "a '.' that is not part of one '...'")
    assert_error_has(function() return wick.einsum("...ijk->ij", a) end, "operand 1 has 2 dimension(s) but its subscripts '...ijk' name more")
    assert_error_has(function() return wick.einsum("...ij,...jk->...ik", wick.ones(2, 2, 3), wick.ones(4, 3, 2)) end,
      "subscript '...' has size 4 in operand 2 but size 2 earlier")
    assert_error_has(function() return wick.einsum("ij-ji", a) end, "misplaced '-'")
    assert_error_has(function() return wick.einsum(3, a) end, "einsum: expected a string for argument 'equation'")
  end)
  it("works on empty and meta tensors", function()
    assert.are.same({ 2, 0 }, shape_of(wick.einsum("ij,jk->ik", wick.ones(2, 3), wick.ones(3, 0))))
    assert.are.same({ { 0, 0 }, { 0, 0 } }, wick.einsum("ij,jk->ik", wick.ones(2, 0), wick.ones(0, 2)):totable())
    local m = wick.einsum("bij,bjk->bik", wick.empty(2, 3, 4, { device = "meta" }), wick.empty(2, 4, 5, { device = "meta" }))
    assert.are.same({ 2, 3, 5 }, shape_of(m))
  end)
end)

describe("in-place random fills", function()
  local N = 20000
  local function mean_std(t)
    local m = t:double():mean():item()
    return m, t:double():std():item()
  end
  it("normal_, uniform_, exponential_, bernoulli_, random_ have the right distributions", function()
    wick.manual_seed(5)
    local t = wick.empty(N)
    local m, s = mean_std(t:normal_(2, 3))
    assert.is_true(math.abs(m - 2) < 0.1 and math.abs(s - 3) < 0.1, m .. " " .. s)
    t:uniform_(-1, 3)
    assert.is_true(t:ge(-1):all() and t:lt(3):all())
    m = mean_std(t)
    assert.is_true(math.abs(m - 1) < 0.05, tostring(m))
    m = mean_std(t:exponential_(4))
    assert.is_true(t:ge(0):all() and math.abs(m - 0.25) < 0.02, tostring(m))
    m = mean_std(t:bernoulli_(0.3))
    assert.is_true(math.abs(m - 0.3) < 0.02, tostring(m))
    local r = wick.empty(N, { dtype = "int64" }):random_(2, 5)
    assert.is_true(r:ge(2):all() and r:le(4):all())
    assert.is_true(math.abs(r:double():mean():item() - 3) < 0.05)
    local r2 = wick.empty(100):random_(3)
    assert.is_true(r2:ge(0):all() and r2:le(2):all())
    local g = wick.empty(N):geometric_(0.25)
    assert.is_true(g:ge(1):all() and math.abs(g:mean():item() - 4) < 0.2)
    local ln = wick.empty(N, { dtype = "float64" }):log_normal_(0, 0.5)
    assert.is_true(ln:gt(0):all() and math.abs(ln:log():mean():item()) < 0.03)
  end)
  it("take PyTorch's keywords as an options table", function()
    local t = wick.empty(2000)
    local m, s = mean_std(t:normal_({ std = 0.02 }))
    assert.is_true(math.abs(m) < 0.005 and math.abs(s - 0.02) < 0.003, m .. " " .. s)
    t:uniform_({ from = 5, to = 6 })
    assert.is_true(t:ge(5):all() and t:lt(6):all())
    t:random_({ to = 3 })
    assert.is_true(t:ge(0):all() and t:le(2):all())
    t:bernoulli_({ p = 1 })
    assert.is_true(t:eq(1):all())
    assert_error_has(function() return t:normal_({ sd = 1 }) end, "normal_: unknown option 'sd'")
  end)
  it("are repeatable under manual_seed and return the tensor itself", function()
    local t = wick.empty(2, 3)
    wick.manual_seed(9)
    local a = t:normal_():clone()
    assert.are.equal(t, t:uniform_())
    wick.manual_seed(9)
    assert.is_true(a:equal(t:normal_()))
    wick.manual_seed(9)
    local b = wick.bernoulli(wick.full({ 1000 }, 0.5))
    wick.manual_seed(9)
    assert.is_true(b:equal(wick.full({ 1000 }, 0.5):bernoulli()))
    assert.is_true(b:eq(0):any() and b:eq(1):any())
  end)
  it("raise on bad arguments", function()
    assert_error_has(function() return wick.empty(3, { dtype = "int64" }):normal_() end, "normal_: expected a floating-point tensor")
    assert_error_has(function() return wick.empty(3):normal_(0, -1) end, "normal_: argument 'std' must be between 0")
    assert_error_has(function() return wick.empty(3):uniform_(2, 1) end, "uniform_: expects to return a [from, to) range")
    assert_error_has(function() return wick.empty(3):bernoulli_(1.5) end, "bernoulli_: argument 'p' must be between 0 and 1")
    assert_error_has(function() return wick.empty(3):exponential_(0) end, "exponential_: expects lambda > 0.0")
    assert_error_has(function() return wick.empty(3):random_(4, 2) end, "random_ expects 'from' to be less than 'to'")
    assert_error_has(function() return wick.empty(3):geometric_(1) end, "geometric_: expects p to be in (0, 1)")
    local w = wick.empty(3, { requires_grad = true })
    assert_error_has(function() return w:normal_() end, "normal_: a leaf tensor that requires grad is used in an in-place operation")
    wick.no_grad(function() w:uniform_(-1, 1) end) -- how nn.init fills parameters
    assert.is_true(w:ge(-1):all() and w.requires_grad)
  end)
end)

describe("on a GPU (the same results as the CPU)", function()
  if not wick.cuda.is_available() then
    pending("needs a CUDA GPU (wick.cuda.is_available() is false here)")
    return
  end
  local same = support.assert_same_on
  local dev = "cuda:0"
  it("sort, argsort and topk, short and long lines, every dim", function()
    for _, n in ipairs({ 1, 5, 100, 2048, 2049, 5000 }) do
      local vals = numbers(3 * n, n, n > 100 and 50 or nil)
      local t = wick.tensor(vals):view(3, n)
      same(dev, function(d) return t:to(d):sort(2) end)
      same(dev, function(d) return t:to(d):sort(2, true) end)
      same(dev, function(d) return t:to(d):double():sort(1, true) end)
      same(dev, function(d) return t:to(d):long():sort(2) end)
      same(dev, function(d) return t:to(d):topk(1) end)
    end
  end)
  it("cumsum and cumprod", function()
    local t = wick.tensor(numbers(3 * 700, 4)):view(3, 700) / 10
    same(dev, function(d) return t:to(d):cumsum(2) end, { tol = 1e-4 })
    same(dev, function(d) return t:to(d):double():cumsum(1) end)
    same(dev, function(d) return (t:to(d) / 100 + 1):double():cumprod(2) end, { tol = 1e-9 })
    same(dev, function(d) return t:to(d):long():cumsum(2) end)
    local short = wick.tensor(numbers(3 * 5000, 6)):view(5000, 3) / 10 -- a thread per line
    same(dev, function(d) return short:to(d):cumsum(2), short:to(d):cumprod(2) end, { tol = 1e-5 })
    same(dev, function(d) return short:to(d):cumsum(1) end, { tol = 1e-4 })
  end)
  it("the compositions: tril, split, einsum, clamp, where, gradients", function()
    local a = wick.randn(4, 5)
    same(dev, function(d) return a:to(d):tril(1), a:to(d):triu(-1) end)
    same(dev, function(d) return a:to(d):split({ 2, 2 }) end)
    same(dev, function(d) return wick.einsum("ij,kj->ik", a:to(d), a:to(d)) end, { tol = 1e-5 })
    same(dev, function(d) return a:to(d):clamp(a:to(d) * 0, 0.5) end)
    same(dev, function(d)
      local x = a:to(d):clone():requires_grad_()
      local v = x:sort(2)
      ;(v:cumsum(2) * wick.arange(5, { device = d })):sum():backward()
      return x.grad
    end, { tol = 1e-5 })
  end)
  it("random ops stay on the device with valid values", function()
    local s = wick.multinomial(wick.tensor({ 1, 2, 3 }, { device = dev }), 100, true)
    assert.are.equal("cuda", s.device.type)
    assert.is_true(s:ge(1):all() and s:le(3):all())
    local r = wick.randint(0, 10, { 100 }, { device = dev })
    assert.are.equal("cuda", r.device.type)
    assert.is_true(r:ge(0):all() and r:le(9):all())
    local p = wick.randperm(50, { device = dev })
    assert.is_true(p:sort():equal(wick.arange(1, 51, { device = dev }):long()))
    local t = wick.empty(1000, { device = dev }):normal_()
    assert.is_true(math.abs(t:mean():item()) < 0.2)
  end)
end)

describe("flip, roll, amax, logsumexp, nonzero, repeat, tile, diag, products, linspace, meshgrid", function()
  local I64 = { dtype = "int64" }
  local t = wick.arange(6):reshape(2, 3)
  local function same(x, want) assert.are.same(want, x:totable()) end

  it("flip and roll, with their gradients", function()
    same(t:flip(2), { { 2, 1, 0 }, { 5, 4, 3 } })
    same(wick.flip(t, { 1, 2 }), { { 5, 4, 3 }, { 2, 1, 0 } })
    same(t:flip(1, 2), { { 5, 4, 3 }, { 2, 1, 0 } })
    same(t:roll(1, 2), { { 2, 0, 1 }, { 5, 3, 4 } })
    same(t:roll(-1), { { 1, 2, 3 }, { 4, 5, 0 } })
    same(t:roll({ 1, 4 }, { 1, 2 }), { { 5, 3, 4 }, { 2, 0, 1 } })
    assert.are_not.equal(t, t:roll(3, 2)) -- a copy even when nothing moves
    local g = wick.tensor({ 1, 2, 3 }, { requires_grad = true })
    ;(g:flip(1):roll(1) * wick.tensor({ 1, 10, 100 })):sum():backward()
    same(g.grad, { 1, 100, 10 })
    assert.has_error(function() t:roll({ 1, 2 }, 1) end)
    support.assert_error_has(function() t:flip() end, "flip: expected a dim or a table of dims")
    support.assert_error_has(function() t:movedim(1) end, "movedim: expected a dim")
  end)

  it("amax, amin, logsumexp", function()
    same(t:amax(2), { 2, 5 })
    same(t:amin({ 1, 2 }), 0)
    same(t:amax(1, true), { { 3, 4, 5 } })
    local x = wick.tensor({ { 1, 2 }, { -math.huge, -math.huge }, { 1000, 1000 } }, { dtype = "float64" })
    local l = x:logsumexp(2):totable()
    assert.is_true(math.abs(l[1] - math.log(math.exp(1) + math.exp(2))) < 1e-12)
    assert.are.equal(-math.huge, l[2])
    assert.is_true(math.abs(l[3] - (1000 + math.log(2))) < 1e-9) -- no overflow
    assert.are.same({ 3, 1 }, x:logsumexp(2, true):size())
  end)

  it("nonzero gives 1-based coordinates", function()
    same(wick.tensor({ { 0, 1 }, { 2, 0 } }):nonzero(), { { 1, 2 }, { 2, 1 } })
    local r, c = (table.unpack or unpack)(wick.tensor({ { 0, 1 }, { 2, 3 } }):nonzero({ as_tuple = true }))
    same(r, { 1, 2, 2 })
    same(c, { 2, 1, 2 })
    assert.are.same({ 0, 1 }, wick.zeros(3):nonzero():size())
  end)

  it("repeat_interleave, repeat (repeat_tensor), tile", function()
    same(wick.tensor({ 1, 2 }):repeat_interleave(2), { 1, 1, 2, 2 })
    same(t:repeat_interleave(wick.tensor({ 1, 2 }, I64), 1), { { 0, 1, 2 }, { 3, 4, 5 }, { 3, 4, 5 } })
    same(t:repeat_interleave({ 0, 1, 2 }, 2), { { 1, 2, 2 }, { 4, 5, 5 } })
    same(t["repeat"](t, 2, 1), { { 0, 1, 2 }, { 3, 4, 5 }, { 0, 1, 2 }, { 3, 4, 5 } })
    same(wick.tensor({ 1, 2 }):repeat_tensor(2, 2), { { 1, 2, 1, 2 }, { 1, 2, 1, 2 } })
    same(wick.tensor({ 1, 2 }):tile(2), { 1, 2, 1, 2 })
    same(t:tile(2), { { 0, 1, 2, 0, 1, 2 }, { 3, 4, 5, 3, 4, 5 } })
    assert.has_error(function() t:repeat_tensor(2) end)
    -- always a copy (PyTorch's repeat and tile), even when only new leading dims repeat
    for _, r in ipairs({ { 3, 1 }, { 1 }, { 1, 1 } }) do
      local s = wick.zeros(2)
      local out = s:repeat_tensor(r)
      out:mul_(2):add_(5) -- an expanded view would refuse the in-place op
      same(s, { 0, 0 })
      assert.is_true(out:eq(5):all())
    end
    local s = wick.zeros(2)
    s:tile(1):fill_(1)
    same(s, { 0, 0 })
  end)

  it("take dim by name, as PyTorch's dim= ({dim = n}), and dtype constants", function()
    local a = wick.arange(6):reshape(2, 3):to(wick.float)
    assert.are.same({ 2, 6 }, wick.cat({ a, a }, { dim = 2 }):size())
    assert.are.same({ 2, 2, 3 }, wick.stack({ a, a }, { dim = 1 }):size())
    assert.are.same({ 1, 2, 3 }, a:unsqueeze({ dim = 1 }):size())
    assert.are.same({ 2, 3 }, a:unsqueeze(1):squeeze({ dim = 1 }):size())
    assert.is_true(a:softmax({ dim = 2 }):equal(a:softmax(2)))
    assert.is_true(a:log_softmax({ dim = -1 }):equal(a:log_softmax(2)))
    assert_error_has(function() return wick.cat({ a, a }, { axes = 2 }) end, "expected a dimension (a number, or {dim = n})")
    assert_error_has(function() return a:softmax({ dim = 0 }) end, "dimensions count from 1")
    -- PyTorch's dtype constants: torch.long, torch.double, ...
    assert.are.equal("int64", wick.tensor({ 1, 2 }, { dtype = wick.long }).dtype)
    assert.are.equal("float64", a:to(wick.double).dtype)
    assert.are.equal("float16", a:to(wick.half).dtype)
    assert.are.equal("int32", a:to(wick.int).dtype)
    assert.are.equal("uint8", a:to(wick.byte).dtype)
    assert.are.equal("float32", wick.zeros(1, { dtype = wick.float }).dtype)
    -- a misspelled constant is nil: an error, not a silent no-op
    assert_error_has(function() return a:to(wick.Long) end, "to: expected a device, a dtype")
  end)

  it("diag both ways", function()
    same(wick.diag(wick.tensor({ 1, 2 })), { { 1, 0 }, { 0, 2 } })
    same(wick.diag(wick.tensor({ 1, 2 }), -1), { { 0, 0, 0 }, { 1, 0, 0 }, { 0, 2, 0 } })
    same(t:diag(), { 0, 4 })
    same(t:diag(1), { 1, 5 })
    same(t:diag(-1), { 3 })
    same(t:diag(5), {})
  end)

  it("outer, dot, mv, lerp, addcmul, addcdiv", function()
    same(wick.outer(wick.tensor({ 1, 2 }), wick.tensor({ 3, 4, 5 })), { { 3, 4, 5 }, { 6, 8, 10 } })
    assert.are.equal(11, wick.tensor({ 1, 2 }):dot(wick.tensor({ 3, 4 })):item())
    assert.has_error(function() wick.tensor({ 1, 2 }):dot(wick.tensor({ 3 })) end)
    same(t:mv(wick.tensor({ 1, 1, 1 })), { 3, 12 })
    same(wick.tensor({ 1, 2 }):lerp(wick.tensor({ 3, 6 }), 0.5), { 2, 4 })
    same(wick.ones(2):addcmul(wick.tensor({ 2, 3 }), wick.tensor({ 4, 5 }), { value = 0.5 }), { 5, 8.5 })
    same(wick.ones(2):addcdiv(wick.tensor({ 2, 3 }), wick.tensor({ 4, 6 }), 2), { 2, 2 })
    local u = wick.ones(2)
    u:addcmul_(wick.tensor({ 2, 3 }), wick.tensor({ 1, 1 }))
    same(u, { 3, 4 })
  end)

  it("linspace, logspace, meshgrid", function()
    same(wick.linspace(0, 1, 5), { 0, 0.25, 0.5, 0.75, 1 })
    local l = wick.linspace(-1, 0.3, 7, { dtype = "float64" }):totable()
    assert.are.equal(-1, l[1])
    assert.are.equal(0.3, l[7]) -- both ends exact
    same(wick.linspace(2, 3, 1), { 2 })
    assert.are.same({ 0 }, wick.linspace(0, 1, 0):size())
    same(wick.logspace(0, 2, 3), { 1, 10, 100 })
    same(wick.logspace(0, 3, 4, 2), { 1, 2, 4, 8 })
    local a, b = wick.meshgrid(wick.tensor({ 1, 2, 3 }), wick.tensor({ 4, 5 }))
    same(a, { { 1, 1 }, { 2, 2 }, { 3, 3 } })
    same(b, { { 4, 5 }, { 4, 5 }, { 4, 5 } })
    local c, d = wick.meshgrid({ wick.tensor({ 1, 2, 3 }), wick.tensor({ 4, 5 }) }, { indexing = "xy" })
    same(c, { { 1, 2, 3 }, { 1, 2, 3 } })
    same(d, { { 4, 4, 4 }, { 5, 5, 5 } })
  end)

  it("tolist, type_as", function()
    assert.are.same({ { 0, 1, 2 }, { 3, 4, 5 } }, t:tolist())
    assert.are.equal("int64", t:type_as(wick.ones(1, I64)).dtype)
  end)
end)

describe("logical ops, counts, diff, trace, movedim, take, index_add, scatter_add, median, unique, cdist", function()
  local I64 = { dtype = "int64" }
  local function same(x, want) assert.are.same(want, x:totable()) end
  local a, b = wick.tensor({ 0, 1, 2, 0 }), wick.tensor({ 1, 1, 0, 0 })

  it("logical ops give bool; nonzero is true", function()
    same(a:logical_and(b), { false, true, false, false })
    same(wick.logical_or(a, b), { true, true, true, false })
    same(a:logical_xor(b), { true, false, true, false })
    same(a:logical_not(), { true, false, false, true })
    same(a:logical_and(true), { false, true, true, false })
    assert.are.equal(2, a:count_nonzero():item())
    same(wick.tensor({ { 0, 1 }, { 2, 3 } }):count_nonzero(2), { 1, 2 })
  end)

  it("hypot, nan_to_num, diff, trace", function()
    same(wick.tensor({ 3, 5 }):hypot(wick.tensor({ 4, 12 })), { 5, 13 })
    same(wick.tensor({ 0 / 0, 1 / 0, -1 / 0, 1 }, { dtype = "float64" }):nan_to_num(),
      { 0, 1.7976931348623157e308, -1.7976931348623157e308, 1 })
    same(wick.tensor({ 0 / 0, 1 / 0, -1 / 0 }):nan_to_num(7, 8, -9), { 7, 8, -9 })
    same(wick.tensor({ 1 / 0 }, { dtype = "float16" }):nan_to_num({ nan = 1 }), { 65504 })
    same(wick.tensor({ 1, 4, 9, 16 }):diff(), { 3, 5, 7 })
    same(wick.tensor({ 1, 4, 9, 16 }):diff(2), { 2, 2 })
    same(wick.tensor({ { 1, 2 }, { 5, 9 } }):diff(1, 1), { { 4, 7 } })
    assert.are.same({ 0 }, wick.tensor({ 1 }):diff():size())
    assert.are.equal(4, wick.arange(6):reshape(2, 3):trace():item())
  end)

  it("movedim is a view; take reads the flattened tensor", function()
    local z = wick.zeros(2, 3, 4)
    assert.are.same({ 3, 4, 2 }, z:movedim(1, 3):size())
    assert.are.same({ 3, 4, 2 }, z:movedim({ 1, 2 }, { 3, 1 }):size())
    assert.are.same({ 4, 2, 3 }, wick.moveaxis(z, -1, 1):size())
    assert.is_true(z:movedim(1, 3):is_same_storage(z))
    same(wick.tensor({ { 1, 2 }, { 3, 4 } }):take(wick.tensor({ { 4, 1 } }, I64)), { { 4, 1 } })
  end)

  it("index_add and scatter_add add up repeated indices, with gradients", function()
    same(wick.zeros(3, 2):index_add(1, wick.tensor({ 1, 3, 1 }, I64), wick.ones(3, 2)), { { 2, 2 }, { 0, 0 }, { 1, 1 } })
    same(wick.zeros(2, 3):index_add(2, wick.tensor({ 3, 3 }, I64), wick.ones(2, 2), { alpha = 2 }), { { 0, 0, 4 }, { 0, 0, 4 } })
    local t = wick.zeros(2, 3)
    t:scatter_add_(2, wick.tensor({ { 1, 1 }, { 3, 2 } }, I64), wick.tensor({ { 1, 2 }, { 3, 4 } }))
    same(t, { { 3, 0, 0 }, { 0, 4, 3 } })
    same(wick.zeros(3):scatter_add(1, wick.tensor({ 2, 2, 1 }, I64), wick.tensor({ 1, 2, 3, 4 })), { 3, 3, 0 }) -- src may be larger
    local src = wick.tensor({ 1, 2, 3 }, { requires_grad = true })
    ;(wick.zeros(2):index_add(1, wick.tensor({ 2, 2, 1 }, I64), src) * wick.tensor({ 10, 100 })):sum():backward()
    same(src.grad, { 100, 100, 10 })
  end)

  it("median (the lower one), kthvalue, unique", function()
    assert.are.equal(2, wick.tensor({ 3, 1, 2, 4 }):median():item())
    local v, i = wick.tensor({ { 3, 1, 2 }, { 9, 8, 7 } }):median(2)
    same(v, { 2, 8 })
    same(i, { 3, 2 })
    local kv, ki = wick.tensor({ 5, 1, 4 }):kthvalue(3)
    assert.are.equal(5, kv:item())
    assert.are.equal(1, ki:item())
    local u, inv, counts = wick.tensor({ 3, 1, 2, 1, 3 }):unique({ return_inverse = true, return_counts = true })
    same(u, { 1, 2, 3 })
    same(inv, { 3, 1, 2, 1, 3 })
    same(counts, { 2, 1, 2 })
    same(wick.unique(wick.tensor({ { 2, 2 }, { 1, 2 } })), { 1, 2 })
  end)

  it("cdist, tril_indices, triu_indices, var_mean", function()
    assert_close(wick.cdist(wick.tensor({ { 0, 0 }, { 1, 1 } }), wick.tensor({ { 3, 4 }, { 1, 1 } })):totable(),
      { { 5, math.sqrt(2) }, { math.sqrt(13), 0 } }, 1e-6)
    same(wick.tril_indices(3, 3), { { 1, 2, 2, 3, 3, 3 }, { 1, 1, 2, 1, 2, 3 } })
    same(wick.triu_indices(2, 3, 1), { { 1, 1, 2 }, { 2, 3, 3 } })
    local var, mean = wick.tensor({ { 1, 2 }, { 3, 5 } }):var_mean(2, { correction = 0 })
    same(var, { 0.25, 1 })
    same(mean, { 1.5, 4 })
  end)
end)

describe("floor_divide, fmax, nanmean, baddbmm, rot90, diag_embed, broadcast_tensors, tensordot, searchsorted, block_diag", function()
  local function same(x, want) assert.are.same(want, x:totable()) end
  it("elementwise and reductions", function()
    same(wick.tensor({ 7, -7 }, { dtype = "int64" }):floor_divide(2), { 3, -4 })
    assert.are.equal("int64", wick.tensor({ 7 }, { dtype = "int64" }):floor_divide(2).dtype)
    same(wick.tensor({ 7.5 }):floor_divide(2), { 3 })
    -- div's rounding modes; integers stay integers, exact beyond float32's 2^24
    local big = wick.tensor({ 7, -7, 100000001 }, { dtype = "int64" })
    same(big:div(2, { rounding_mode = "floor" }), { 3, -4, 50000000 })
    same(wick.div(big, 2, { rounding_mode = "trunc" }), { 3, -3, 50000000 })
    same(big:floor_divide(3), { 2, -3, 33333333 })
    assert.are.equal("int64", big:div(wick.tensor({ 2 }, { dtype = "int32" }), { rounding_mode = "floor" }).dtype)
    same(wick.tensor({ 7.5, -7.5 }):divide(2, { rounding_mode = "trunc" }), { 3, -3 })
    same(big:div(2.5, { rounding_mode = "floor" }):narrow(1, 1, 2), { 2, -3 }) -- a float divisor: floats
    local q = big:clone()
    assert.are.equal(q, q:div_(2, { rounding_mode = "floor" }))
    same(q, { 3, -4, 50000000 })
    assert_error_has(function() big:div(0, { rounding_mode = "floor" }) end, "ZeroDivisionError")
    assert_error_has(function() big:div(2, { rounding_mode = "round" }) end, "'trunc' or 'floor'")
    assert.are.equal("float32", wick.result_type(big, 2.5))
    assert.are.equal("int64", wick.result_type(wick.tensor({ true }), 2))
    assert.are.equal("float16", wick.promote_types("int32", "float16"))
    same(wick.tensor({ 0 / 0, 1, 4 }):fmax(wick.tensor({ 2, 0 / 0, 3 })), { 2, 1, 4 })
    same(wick.fmin(wick.tensor({ 0 / 0, 1 }), wick.tensor({ 2, 0 })), { 2, 0 })
    assert.are.equal(2, wick.tensor({ 1, 0 / 0, 3 }):nanmean():item())
    same(wick.tensor({ { 1, 0 / 0 }, { 3, 5 } }):nanmean(2), { 1, 4 })
    assert.is_true(wick.all(wick.tensor({ 1, 1 })))
    assert.is_false(wick.any(wick.tensor({ 0, 0 })))
    same(wick.square(wick.tensor({ 3 })), { 9 })
    assert.is_false(wick.inference_mode(function() return wick.is_grad_enabled() end))
  end)
  it("products and layouts", function()
    same(wick.ones(2, 2, 2):baddbmm(wick.ones(2, 2, 3), wick.ones(2, 3, 2), { beta = 0.5, alpha = 2 })[1], { { 6.5, 6.5 }, { 6.5, 6.5 } })
    same(wick.tensor({ { 1, 2 }, { 3, 4 } }):rot90(), { { 2, 4 }, { 1, 3 } })
    same(wick.tensor({ { 1, 2 }, { 3, 4 } }):rot90(-1), { { 3, 1 }, { 4, 2 } })
    same(wick.tensor({ { 1, 2 }, { 3, 4 } }):rot90(2), { { 4, 3 }, { 2, 1 } })
    same(wick.tensor({ 1, 2 }):diag_embed(), { { 1, 0 }, { 0, 2 } })
    same(wick.tensor({ { 1, 2 } }):diag_embed(-1), { { { 0, 0, 0 }, { 1, 0, 0 }, { 0, 2, 0 } } })
    local a, b = wick.broadcast_tensors(wick.ones(3, 1), wick.zeros(2))
    assert.are.same({ 3, 2 }, a:size())
    assert.are.same({ 3, 2 }, b:size())
    assert.has_error(function() wick.broadcast_tensors(wick.ones(3), wick.ones(2)) end)
    same(wick.tensordot(wick.arange(6):reshape(2, 3), wick.arange(12):reshape(3, 4), 1), { { 20, 23, 26, 29 }, { 56, 68, 80, 92 } })
    assert.are.equal(6, wick.tensordot(wick.ones(2, 3), wick.ones(3, 2), { { 1, 2 }, { 2, 1 } }):item())
    same(wick.searchsorted(wick.tensor({ 1, 3, 5, 7 }), wick.tensor({ 3, 6, 9, 0 })), { 2, 4, 5, 1 })
    same(wick.searchsorted(wick.tensor({ 1, 3, 5, 7 }), wick.tensor({ 3 }), { right = true }), { 3 })
    same(wick.bucketize(wick.tensor({ 3, 6 }), wick.tensor({ 1, 3, 5 }), { right = true }), { 3, 4 })
    same(wick.block_diag(wick.ones(1, 2), wick.tensor({ { 3 } })), { { 1, 1, 0 }, { 0, 0, 3 } })
    same(wick.cartesian_prod(wick.tensor({ 1, 2 }), wick.tensor({ 3, 4 })), { { 1, 3 }, { 1, 4 }, { 2, 3 }, { 2, 4 } })
    assert.are.same({ 2, 4, 3 }, wick.randn(2, 3, 4).mT:size())
  end)
  it("padding modules", function()
    local nn = wick.nn
    local x = wick.arange(4):reshape(1, 1, 2, 2)
    same(nn.ZeroPad2d(1)(x)[1][1], { { 0, 0, 0, 0 }, { 0, 0, 1, 0 }, { 0, 2, 3, 0 }, { 0, 0, 0, 0 } })
    same(nn.ConstantPad2d({ 1, 0, 0, 0 }, 9)(x)[1][1], { { 9, 0, 1 }, { 9, 2, 3 } })
    same(nn.ReflectionPad1d(1)(wick.arange(3):reshape(1, 1, 3)), { { { 1, 0, 1, 2, 1 } } })
    same(nn.ReplicationPad2d({ 0, 1, 0, 0 })(x)[1][1], { { 0, 1, 1 }, { 2, 3, 3 } })
    assert.has_error(function() nn.ZeroPad2d({ 1, 2 }) end)
  end)
end)

describe("PyTorch's other spellings", function()
  it("axis is dim's other name wherever dim is an option (NumPy's, which PyTorch takes too)", function()
    local x = wick.tensor({ { 1, 2, 3 }, { 4, 5, 6 } })
    assert.are.same({ 5, 7, 9 }, x:sum({ axis = 1 }):totable())
    assert.are.same({ { 2 }, { 5 } }, x:mean({ axis = 2, keepdims = true }):totable())
    assert.are.same({ { 1, 2, 6 }, { 4, 20, 120 } }, wick.cumprod(x, { axis = 2 }):totable())
    assert.are.same({ 3, 3 }, x:argmax({ axis = 2 }):totable())
    assert.are.same({ 3, 6 }, x:amax({ axis = 2 }):totable())
    assert.are.same({ 4, 3 }, wick.cat({ x, x }, { axis = 1 }):size())
    assert_error_has(function() x:sum({ axis = 1, dim = 1 }) end, "got both dim and axis")
    assert_error_has(function() x:amax({ axis = 1, dim = 1 }) end, "got both dim and axis")
    assert_error_has(function() x:sum({ axes = 1 }) end, "unknown option 'axes'")
  end)

  it("roll{shifts =, dims =} (Swin), arange{['end'] =} (ultralytics), nan_to_num with out= and in place", function()
    local x = wick.arange(12):view(3, 4)
    assert.are.same(x:roll({ 1, 1 }, { 1, 2 }):totable(), wick.roll(x, { shifts = { 1, 1 }, dims = { 1, 2 } }):totable())
    assert.are.same({ { 11, 8, 9, 10 }, { 3, 0, 1, 2 }, { 7, 4, 5, 6 } }, x:roll({ shifts = { 1, 1 }, dims = { 1, 2 } }):totable())
    assert_error_has(function() x:roll({ dims = 1 }) end, "missing argument 'shifts'")
    assert.are.same({ 0, 1, 2 }, wick.arange({ ["end"] = 3, dtype = "int64" }):totable())
    assert.are.same({ 2, 4, 6 }, wick.arange(2, { ["end"] = 7, step = 2 }):totable())
    assert_error_has(function() wick.arange({ step = 2 }) end, "missing argument 'end'")
    local g = wick.tensor({ 0 / 0, 1 / 0, -1 / 0, 1 })
    assert.are.equal(g, wick.nan_to_num(g, { nan = 0, posinf = 1e5, neginf = -1e5, out = g })) -- stylegan2-ada's misc.nan_to_num
    assert.are.same({ 0, 1e5, -1e5, 1 }, g:totable())
    local h = wick.tensor({ 0 / 0, 1 })
    assert.are.equal(h, h:nan_to_num_(3))
    assert.are.same({ 3, 1 }, h:totable())
  end)

  it("wick.stack and wick.cat take the tensors as arguments too (a function's several results)", function()
    local a, b = wick.arange(3), wick.arange(4)
    local coords = wick.stack(wick.meshgrid({ a, b }, { indexing = "ij" })) -- Swin's torch.stack(torch.meshgrid(...))
    assert.are.same({ 2, 3, 4 }, coords:size())
    assert.are.same({ 0, 1, 2, 3 }, coords[2][1]:totable())
    assert.are.same({ 3, 2 }, wick.stack(a, a, -1):size())
    assert.are.same({ 0, 1, 2, 0, 1, 2 }, wick.cat(a, a, { dim = 1 }):totable())
    assert_error_has(function() wick.cat(a, "x") end, "wick.cat")
  end)
end)

describe("split and chunk take PyTorch's keywords in one table", function()
  it("split{split_size = {...}, dim = d} (mamba-minimal) and chunk{chunks =, dim =}", function()
    local x = wick.randn(2, 6, 3)
    local p = x:split({ split_size = { 2, 4 }, dim = 2 })
    assert.are.same({ { 2, 2, 3 }, { 2, 4, 3 } }, { p[1]:size(), p[2]:size() })
    assert.are.equal(3, #wick.split(x, { split_size_or_sections = 2, dim = 2 }))
    assert.are.equal(2, #x:split({ 2, 4 }, { dim = 2 }))
    local c = x:chunk({ chunks = 3, dim = 3 })
    assert.are.same({ 2, 6, 1 }, c[3]:size())
    assert_error_has(function() x:split({ dim = 2 }) end, "missing argument 'split_size'")
    assert_error_has(function() x:split({ 5, 4 }, 2) end, "dimension 2")
  end)
end)

describe("integer operands and the default dtype", function()
  it("take set_default_dtype's dtype in true division, with float numbers and in float functions", function()
    local a = wick.tensor({ 1, 2, 3 }, { dtype = "int64" })
    wick.set_default_dtype("float64")
    local ok, err = pcall(function()
      assert.are.equal("float64", (a / 2).dtype)
      assert.are.equal("float64", (a * 0.5).dtype)
      assert.are.equal("float64", (a:sum() / 10).dtype)
      assert.are.equal("float64", a:sqrt().dtype)
      assert.are.equal(0.1, (a:eq(1):sum() / 10):item()) -- float64's 0.1, as PyTorch's
    end)
    wick.set_default_dtype("float32")
    assert(ok, err)
    assert.are.equal("float32", (a / 2).dtype)
  end)
end)

describe("window functions, an empty logsumexp, bernoulli's range", function()
  local function near(t, want) support.assert_close(t:totable(), want, 1e-6) end
  it("hann, hamming, blackman, bartlett as PyTorch's (periodic and symmetric)", function()
    near(wick.hann_window(5), { 0, 0.3454915, 0.9045085, 0.9045085, 0.3454915 })
    near(wick.hann_window(5, false), { 0, 0.5, 1, 0.5, 0 })
    near(wick.hamming_window(5), { 0.08, 0.3978522, 0.9121479, 0.9121478, 0.3978521 })
    near(wick.blackman_window(5, { periodic = false }), { 0, 0.34, 1, 0.34, 0 })
    near(wick.bartlett_window(5), { 0, 0.4, 0.8, 0.8, 0.4 })
    assert.are.same({ 1 }, wick.hann_window(1):totable())
    assert.are.equal("float64", wick.hann_window(4, { dtype = "float64" }).dtype)
  end)
  it("logsumexp over an empty dim is -inf; bernoulli refuses probabilities outside [0, 1]", function()
    assert.are.same({ -math.huge, -math.huge }, wick.zeros(2, 0):logsumexp(2):totable())
    assert_error_has(function() wick.bernoulli(wick.tensor({ 0.5, 1.5 })) end, "p_in >= 0 && p_in <= 1")
    assert_error_has(function() wick.zeros(2):bernoulli_(wick.tensor({ -1, 0 })) end, "p_in >= 0")
  end)
end)

describe("einsum broadcasting", function()
  it("broadcasts size-1 dims and '...' of different counts, as torch.einsum", function()
    local a, b = wick.randn(2, 1, 3, 4, { dtype = "float64" }), wick.randn(5, 4, 2, { dtype = "float64" })
    local r = wick.einsum("...ij,...jk->...ik", a, b)
    assert.are.same({ 2, 5, 3, 2 }, r:size())
    support.assert_close(r:totable(), a:matmul(b):totable(), 1e-12)
    assert.are.equal(6, wick.einsum("i,i->", wick.tensor({ 2 }), wick.tensor({ 1, 1, 1 })):item())
    assert_error_has(function() wick.einsum("i,i->", wick.ones(2), wick.ones(3)) end, "do not broadcast")
    -- a product with nothing summed (mamba's selective scan) is an elementwise product
    local d, B, u = wick.rand(2, 3, 4, { dtype = "float64" }), wick.rand(2, 3, 5, { dtype = "float64" }), wick.rand(2, 4, 3, { dtype = "float64" })
    local want = (d:permute(1, 3, 2):unsqueeze(4) * B:unsqueeze(2)) * u:unsqueeze(4)
    support.assert_close(wick.einsum("bld,bln,bdl->bdln", d, B, u):totable(), want:totable(), 1e-15)
  end)
end)

describe("the vectorised float32 kernels (log, sin, cos, pow's special exponents)", function()
  it("agree with the float64 results to about one ulp and keep libm's special values", function()
    local x = (wick.rand(100003, { dtype = "float64" }) - 0.5) * 200
    local x32 = x:float()
    local d = x32:double()
    assert.is_true((x32:sin():double() - d:sin()):abs():max():item() < 2e-7)
    assert.is_true((x32:cos():double() - d:cos()):abs():max():item() < 2e-7)
    local p = x32:abs() + 1e-3
    assert.is_true(((p:log():double() - p:double():log()) / p:double():log():abs():clamp_min(1)):abs():max():item() < 2e-7)
    -- beyond the vector range (|x| >= 8192), infinities, NaN and signed zeros go through libm
    local odd = wick.tensor({ 1e4, -3e5, 1 / 0, 0, -0.0 })
    support.assert_close(odd:sin():narrow(1, 1, 2):totable(), wick.tensor({ 1e4, -3e5 }, { dtype = "float64" }):sin():float():totable(), 1e-7)
    assert.is_true(odd:sin()[3]:item() ~= odd:sin()[3]:item()) -- sin(inf) is NaN
    assert.are.equal(-1 / 0, 1 / odd:sin()[5]:item()) -- sin(-0) is -0
    local l = wick.tensor({ 0, -0.0, -1, 1 / 0, 1e-40, 0 / 0 }):log()
    assert.are.same({ -1 / 0, -1 / 0 }, { l[1]:item(), l[2]:item() })
    assert.is_true(l[3]:item() ~= l[3]:item() and l[6]:item() ~= l[6]:item())
    assert.are.equal(1 / 0, l[4]:item())
    assert.is_true(math.abs(l[5]:item() - math.log(1e-40)) < 1e-4) -- a denormal
    local a = wick.tensor({ -2, 0.5, 3 })
    assert.are.same({ 4, 0.25, 9 }, a:pow(2):totable())
    assert.are.same({ -8, 0.125, 27 }, (a ^ 3):totable())
    support.assert_close(a:pow(-1):totable(), { -0.5, 2, 1 / 3 }, 1e-7)
  end)
end)

describe("searchsorted over rows", function()
  it("takes one sorted row per leading index (nerf's sample_pdf)", function()
    local cdf = wick.tensor({ { 0, 0.2, 0.5, 1.0 }, { 0, 0.1, 0.9, 1.0 } })
    local u = wick.tensor({ { 0.1, 0.6, 0.95 }, { 0.05, 0.5, 0.99 } })
    assert.are.same({ { 2, 4, 4 }, { 2, 3, 4 } }, wick.searchsorted(cdf, u, { right = true }):totable())
    assert.are.same({ { 2, 3 } }, wick.searchsorted(cdf:narrow(1, 1, 1), wick.tensor({ { 0.2, 0.3 } })):totable())
    assert_error_has(function() wick.searchsorted(cdf, wick.tensor({ 0.5 })) end, "must match")
  end)
end)

describe("cumprod's gradient with zeros in the input", function()
  it("is PyTorch's: the quotient before the first zero, 0 after it, and the first zero's own", function()
    local x = D({ { 0.5, 0, 2, 0, 3 }, { 1, 2, 3, 4, 0 }, { 0, 0, 1, 2, 3 } }):requires_grad_(true)
    local g = D({ { 1, 2, 3, 4, 5 }, { -1, 0.5, 2, 1, 1 }, { 2, 1, 1, 1, 1 } })
    x:cumprod(2):mul(g):sum():backward()
    -- by the definition: d/dx_i sum_j g_j prod_{k <= j} x_k = sum_{j >= i} g_j prod_{k <= j, k ~= i} x_k
    local X, G = x:detach():totable(), g:totable()
    local want = {}
    for r = 1, #X do
      want[r] = {}
      for i = 1, #X[r] do
        local acc = 0
        for j = i, #X[r] do
          local p = G[r][j]
          for k = 1, j do if k ~= i then p = p * X[r][k] end end
          acc = acc + p
        end
        want[r][i] = acc
      end
    end
    assert_close(x.grad, want, 1e-14)
    gradcheck(function(t) return t:cumprod(1) end, { D({ { 0.5, 0 }, { 0, 2 }, { 3, 0.7 } }) })
  end)
end)

describe("unique_consecutive", function()
  it("gives each run's value in order, the 1-based runs and their lengths", function()
    local t = wick.tensor({ 224, 224, 96, 96, 96, 224 }, { dtype = "int64" })
    local v, inv, c = t:unique_consecutive({ return_inverse = true, return_counts = true })
    assert.are.same({ 224, 96, 224 }, v:totable())
    assert.are.same({ 1, 1, 2, 2, 2, 3 }, inv:totable())
    assert.are.same({ 2, 3, 1 }, c:totable())
    local _, c2 = wick.unique_consecutive(t, { return_counts = true })
    assert.are.same({ 2, 3, 1 }, c2:totable())
    assert.are.same({ 0 }, wick.unique_consecutive(wick.empty(0)):size())
  end)
end)

describe("scatter's reduce option and its indices", function()
  it("adds or multiplies with reduce, and refuses indices outside 1..size", function()
    local I = function(t) return wick.tensor(t, { dtype = "int64" }) end
    assert.are.same({ 2, 0, 0 }, wick.zeros(3):scatter_(1, I({ 1, 1 }), wick.ones(2), { reduce = "add" }):totable())
    assert.are.same({ 18, 2, 2 }, wick.full({ 3 }, 2):scatter(1, I({ 1, 1 }), wick.full({ 2 }, 3), { reduce = "multiply" }):totable())
    assert.are.same({ 3, 0, 0 }, wick.zeros(3):scatter(1, I({ 1, 1 }), 1.5, { reduce = "add" }):totable())
    assert_error_has(function() wick.zeros(3):scatter_(1, I({ 1 }), wick.ones(1), { reduc = "add" }) end, "reduc")
    assert_error_has(function() wick.zeros(3):scatter_(1, I({ 1 }), wick.ones(1), "mean") end, "reduce")
    assert_error_has(function() wick.zeros(4, 3):scatter_add_(1, I({ { 0, 1, 1 } }), wick.ones(1, 3)) end,
      "index 0 is out of bounds for dimension 1 with size 4")
    assert_error_has(function() wick.zeros(4, 3):scatter_add(1, I({ { 5, 1, 1 } }), wick.ones(1, 3)) end, "index 5 is out of bounds")
  end)
end)
