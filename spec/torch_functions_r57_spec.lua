-- torch's top-level functions with PyTorch's keywords and forms (a sweep against PyTorch 2.15):
-- diagonal_scatter over dims that are not adjacent, isin of numbers, hsplit/vsplit/dsplit's
-- keywords, the first arguments by name, var/std's fractional correction, histogram's
-- named results, einsum's sublist form and histogramdd. The numbers are PyTorch's (float64).
local wick = require("wick")
local support = require("spec.support")

local F64 = { dtype = "float64" }
local function T(v) return wick.tensor(v, F64) end
local function I(v) return wick.tensor(v, { dtype = "int64" }) end

-- every element of t within tol (relative) of the flat list want, and t's shape `shape` when given
local function near(t, want, shape, tol)
  tol = tol or 1e-14
  if shape then assert.are.same(shape, support.shape_of(t)) end
  local got = support.values_of(t)
  assert.are.equal(#want, #got)
  for i = 1, #want do
    local ok, why = support.close(got[i], want[i], tol, "element " .. i)
    assert(ok, why)
  end
end
local function shapes(parts)
  local r = {}
  for i = 1, #parts do r[i] = support.shape_of(parts[i]) end
  return r
end

describe("torch functions (r57)", function()
  it("diagonal_scatter over dims that are not adjacent writes the diagonal, with gradients", function()
    local x = wick.arange(24, F64):reshape(2, 3, 4):requires_grad_()
    local src = (wick.arange(6, F64):reshape(3, 2) * 0.5 + 100):requires_grad_()
    local w = wick.linspace(-1, 1, 24, F64):reshape(2, 3, 4)
    local out = wick.diagonal_scatter(x, src, 0, 1, 3)
    near(out, { 100, 1, 2, 3, 101, 5, 6, 7, 102, 9, 10, 11, 12, 100.5, 14, 15, 16, 101.5, 18, 19, 20, 102.5, 22, 23 },
      { 2, 3, 4 })
    local loss = (out * w):sum()
    loss:backward()
    near(x.grad, { 0.0, -0.9130434782608696, -0.8260869565217391, -0.7391304347826086, 0.0, -0.5652173913043479,
      -0.4782608695652174, -0.391304347826087, 0.0, -0.2173913043478261, -0.13043478260869568, -0.043478260869565244,
      0.043478260869565244, 0.0, 0.2173913043478261, 0.30434782608695654, 0.391304347826087, 0.0, 0.5652173913043479,
      0.6521739130434783, 0.7391304347826086, 0.0, 0.9130434782608696, 1.0 })
    near(src.grad, { -1.0, 0.13043478260869568, -0.6521739130434783, 0.4782608695652174, -0.30434782608695654,
      0.8260869565217391 })
    -- dims in decreasing order, with an offset (PyTorch's diagonal_scatter(x, s, 1, 2, 0))
    local base = wick.arange(24, F64):reshape(2, 3, 4)
    near(wick.diagonal_scatter(base, T({ { 7 }, { 8 }, { 9 } }), 1, 3, 1),
      { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 7, 13, 14, 15, 8, 17, 18, 19, 9, 21, 22, 23 })
    near(wick.diagonal_scatter(base, T({ { 7, 8 }, { 7, 8 }, { 7, 8 } }), -1, 3, 1),
      { 0, 7, 2, 3, 4, 7, 6, 7, 8, 7, 10, 11, 12, 13, 8, 15, 16, 17, 8, 19, 20, 21, 8, 23 })
    -- the input is unchanged; a transposed and a sliced input as before
    assert.are.equal(276, base:sum():item())
    assert.are.equal(3, wick.diagonal_scatter(wick.zeros(3, 3):t(), wick.ones(3)):sum():item())
    assert.are.equal(2, wick.diagonal_scatter(wick.zeros(4, 3)[{ {}, { 1, 2 } }], wick.ones(2)):sum():item())
  end)

  it("diagonal_scatter, select_scatter and slice_scatter by PyTorch's names, and their errors", function()
    near(wick.diagonal_scatter { input = wick.zeros(3, 3, F64), src = wick.ones(2, F64), offset = 1 },
      { 0, 1, 0, 0, 0, 1, 0, 0, 0 })
    near(wick.diagonal_scatter(wick.zeros(3, 3, F64), wick.ones(2, F64), { offset = -1 }), { 0, 0, 0, 1, 0, 0, 0, 1, 0 })
    near(wick.zeros(3, 3, F64):diagonal_scatter(wick.ones(3, F64), { dim1 = 2, dim2 = 1 }), { 1, 0, 0, 0, 1, 0, 0, 0, 1 })
    near(wick.select_scatter(wick.zeros(2, 3, F64), wick.ones(2, F64), { dim = 2, index = 2 }), { 0, 1, 0, 0, 1, 0 })
    near(wick.select_scatter { input = wick.zeros(2, 3, F64), src = T({ 4, 5, 6 }), dim = 1, index = -1 },
      { 0, 0, 0, 4, 5, 6 })
    near(wick.slice_scatter { input = wick.zeros(4, 2, F64), src = wick.ones(2, 2, F64), start = 2, ["end"] = 3 },
      { 0, 0, 1, 1, 1, 1, 0, 0 })
    support.assert_error_has(function() return wick.diagonal_scatter(wick.zeros(2, 3, 4), wick.ones(3, 3), 0, 1, 3) end,
      "diagonal_scatter: expected src to have a size equal to the slice of self. src size = [3, 3], slice size = [3, 2]")
    support.assert_error_has(function() return wick.diagonal_scatter(wick.zeros(3, 3), wick.ones(3), { bogus = 1 }) end,
      "diagonal_scatter: unknown option 'bogus'")
    support.assert_error_has(function() return wick.diagonal_scatter(wick.zeros(3, 3), wick.ones(3), 0, 2, 2) end,
      "diagonal_scatter: diagonal dimensions cannot be identical 2, 2")
    support.assert_error_has(function() return wick.select_scatter(wick.zeros(2, 3), wick.ones(2), { dim = 2, index = 5 }) end,
      "select_scatter: index 5 out of range for tensor of size [2, 3] at dimension 2")
    support.assert_error_has(function() return wick.select_scatter(wick.zeros(2, 3), wick.ones(3), { dim = 2, index = 1 }) end,
      "select_scatter: expected src to have a size equal to the slice of self. src size = [3], slice size = [2]")
    support.assert_error_has(function() return wick.select_scatter(wick.zeros(2, 3), wick.ones(2), { dim = 2 }) end,
      "select_scatter: missing required argument 'index'")
  end)

  it("isin of a number (elements or test_elements) is 0-dim, and a fraction is not among integers", function()
    local t = I({ 1, 5 })
    local r = wick.isin(5, t)
    assert.are.same({}, support.shape_of(r))
    assert.are.equal("bool", r.dtype)
    assert.is_true(r:item())
    assert.is_false(wick.isin(5, t, { invert = true }):item())
    assert.are.same({ false, true }, wick.isin(t, 5):totable())
    assert.are.same({}, support.shape_of(wick.isin(2.5, t)))
    assert.is_false(wick.isin(1.5, t):item())
    assert.are.same({ false, true }, wick.isin(T({ 1.5, 5 }), t):totable())
    assert.are.same({ false, true }, wick.isin { elements = t, test_elements = 5 }:totable())
    support.assert_error_has(function() return wick.isin(5, 5) end, "isin: expected elements or test_elements to be a tensor")
  end)

  it("hsplit, vsplit, dsplit take {sections = n} or {indices = {...}}", function()
    local z = wick.arange(12, F64):reshape(3, 4)
    assert.are.same({ { 3, 2 }, { 3, 2 } }, shapes(wick.hsplit(z, { sections = 2 })))
    assert.are.same({ { 3, 1 }, { 3, 2 }, { 3, 1 } }, shapes(wick.hsplit(z, { indices = { 1, 3 } })))
    assert.are.same({ { 1, 4 }, { 1, 4 }, { 1, 4 } }, shapes(wick.vsplit(z, { sections = 3 })))
    assert.are.same({ { 2, 2, 1 }, { 2, 2, 3 } }, shapes(wick.dsplit(wick.zeros(2, 2, 4), { indices = { 1 } })))
    assert.are.same({ { 3, 2 }, { 3, 2 } }, shapes(z:hsplit({ sections = 2 })))
    assert.are.same({ { 3, 2 }, { 3, 2 } }, shapes(wick.hsplit { input = z, sections = 2 }))
    assert.are.same({ { 3, 1 }, { 3, 2 }, { 3, 1 } }, shapes(wick.hsplit(z, { 1, 3 })))
    assert.are.same({ { 3, 2 }, { 3, 2 } }, shapes(wick.tensor_split(z, { sections = 2, dim = 2 })))
    near(wick.hsplit(z, { indices = { 1, 3 } })[2], { 1, 2, 5, 6, 9, 10 })
    support.assert_error_has(function() return wick.hsplit(z, { sections = 3 }) end,
      "the size of the dimension 4 is not divisible by the split_size 3")
    support.assert_error_has(function() return wick.hsplit(z, { bogus = 3 }) end, "hsplit: unknown option 'bogus'")
    support.assert_error_has(function() return wick.vsplit(z, { sections = 3, indices = { 1 } }) end,
      "vsplit: got both sections and indices")
  end)

  it("the first arguments by PyTorch's names", function()
    local m = T({ { 1, 2, 4 }, { 3, -1, 0.5 } })
    local v = T({ 1, 2, 3 })
    assert.are.same({ { 1, 3 }, { 1, 3 } }, shapes(wick.split { tensor = m, split_size_or_sections = 1 }))
    near(wick.cdist { x1 = m, x2 = m:flip(1) }, { 5.024937810560445, 0.0, 0.0, 5.024937810560445 })
    near(wick.kron { input = m[{ {}, { 1, 2 } }], other = T({ { 1, -1 } }) }, { 1, -1, 2, -2, 3, -3, -1, 1 }, { 2, 4 })
    near(m:kron { other = T({ { 2 } }) }, { 2, 4, 8, 6, -2, 1 })
    assert.are.same({ true, false }, wick.isclose { input = T({ 1, 2 }), other = T({ 1, 2.1 }) }:totable())
    assert.are.same({ true, true }, wick.isclose { input = T({ 1, 2 }), other = T({ 1, 2.1 }), atol = 0.2 }:totable())
    near(wick.vander { x = T({ 2, 3, 0.5 }), N = 3 }, { 4, 2, 1, 9, 3, 1, 0.25, 0.5, 1 })
    near(wick.trapezoid { y = T({ 1, 4, 9 }) }, { 9 })
    near(wick.outer { input = v, vec2 = T({ 1, -1 }) }, { 1, -1, 2, -2, 3, -3 })
    near(wick.inner { input = v, other = v }, { 14 })
    assert.are.same({ 0, 1, 2 }, wick.bincount { input = I({ 2, 3, 3 }) }:totable())
    assert.are.equal(3, wick.mode { input = T({ 3, 1, 3 }) }:item())
    near(wick.tensordot { a = m, b = m:t(), dims = 1 }, { 21, 3, 3, 10.25 })
    near(wick.full_like { input = m, fill_value = 2 }, { 2, 2, 2, 2, 2, 2 })
    for _, name in ipairs({ "zeros_like", "ones_like", "empty_like", "rand_like", "randn_like" }) do
      local r = wick[name] { input = m }
      assert.are.same({ 2, 3 }, support.shape_of(r))
      assert.are.equal("float64", r.dtype)
    end
    assert.are.same({ 2, 3 }, support.shape_of(wick.zeros_like { input = m, dtype = "float32" }))
    assert.are.same({ { 1, 2 }, { 1, 3 }, { 2, 3 } }, wick.combinations { input = v }:totable())
  end)

  it("eye, triu_indices, tril_indices, take, trapezoid, polar by PyTorch's keywords", function()
    near(wick.eye { n = 2, m = 3 }, { 1, 0, 0, 0, 1, 0 }, { 2, 3 })
    near(wick.eye(2, { m = 3, dtype = "float64" }), { 1, 0, 0, 0, 1, 0 }, { 2, 3 })
    near(wick.eye { n = 2 }, { 1, 0, 0, 1 }, { 2, 2 })
    -- (PyTorch's [[0, 0, 0, 1, 1, 2], [1, 2, 3, 2, 3, 3]], 1-based)
    assert.are.same({ { 1, 1, 1, 2, 2, 3 }, { 2, 3, 4, 3, 4, 4 } }, wick.triu_indices { row = 3, col = 4, offset = 1 }:totable())
    assert.are.same({ { 2, 3, 3 }, { 1, 1, 2 } }, wick.tril_indices { row = 3, col = 3, offset = -1 }:totable())
    assert.are.same({ { 2, 3, 3 }, { 1, 1, 2 } }, wick.tril_indices(3, 3, { offset = -1 }):totable())
    near(wick.take(T({ 5, 6, 7 }), { index = I({ 3, 1 }) }), { 7, 5 })
    near(T({ 5, 6, 7 }):take { index = I({ 2 }) }, { 6 })
    local y, xs = T({ 1, 4, 9 }), T({ 0, 1, 3.5 })
    near(wick.trapezoid(y, { x = xs }), { 18.75 })
    near(wick.trapezoid { y = y, x = xs, dim = 1 }, { 18.75 })
    near(wick.cumulative_trapezoid(y, { x = xs }), { 2.5, 18.75 })
    local m = T({ { 1, 2, 4 }, { 3, -1, 0.5 } })
    near(wick.trapezoid(m, { dx = 0.3, dim = 1 }), { 0.6, 0.15, 0.6749999999999999 })
    near(wick.cumulative_trapezoid(m, { dx = 0.3 }), { 0.44999999999999996, 1.3499999999999999, 0.3, 0.22499999999999998 })
    support.assert_error_has(function() return wick.trapezoid(y, xs, { x = xs }) end,
      "trapezoid: argument 'x' given both by position and as an option")
    support.assert_error_has(function() return wick.trapezoid(y, { x = xs, dx = 0.5 }) end, "trapezoid: takes either x or dx")
    local p = wick.polar { abs = T({ 2, 0.5 }), angle = T({ 0.5, -2 }) }
    near(p.real, { 1.7551651237807455, -0.2080734182735712 })
    near(p.imag, { 0.958851077208406, -0.45464871341284085 })
  end)

  it("var, std, var_mean, std_mean take a fractional correction", function()
    local v = T({ 1, 2, 4, 7 })
    near(wick.var(v, { correction = 0.5 }), { 6.0 })
    near(wick.std(v, { correction = 0.5 }), { 2.449489742783178 })
    local var, mean = wick.var_mean(v, { correction = 1.5 })
    near(var, { 8.4 })
    near(mean, { 3.5 })
    local std = wick.std_mean(v, { correction = 2.5 })
    near(std, { 3.7416573867739413 })
    local m = T({ { 1, 2, 4 }, { 3, -1, 0.5 } })
    near(m:var(2, { correction = 0.25, keepdim = true }), { 1.6969696969696968, 2.9696969696969693 }, { 2, 1 })
    near(m:std({ dim = 1, correction = -0.5 }), { 0.8944271909999159, 1.3416407864998738, 1.5652475842498528 })
    near(m:var({ dim = { 1, 2 }, correction = 1.75 }), { 3.813725490196078 })
    -- N - correction <= 0: inf (NaN for 0 / 0), as PyTorch's
    local inf, nan
    local warned = support.warnings_of(function()
      inf = m:std({ dim = 1, correction = 2.5 })[1]:item()
      nan = wick.var(wick.ones(2, F64), { correction = 3.5 }):item()
    end)
    assert.are.equal(math.huge, inf)
    assert.is_true(nan ~= nan)
    assert.are.equal(2, #warned)
    support.assert_contains(warned[1], "std(): degrees of freedom is <= 0")
    local g = m:clone():requires_grad_()
    g:std(2, { correction = 0.5 }):sum():backward()
    near(g.grad, { -0.3903600291794133, -0.09759000729485337, 0.4879500364742666, 0.47951222381615644,
      -0.4057411124598247, -0.07377111135633177 }, nil, 1e-13)
  end)

  it("aminmax gives two results (its .min and .max would hide the methods); histogram's read as .hist and .bin_edges", function()
    local m = T({ { 1, 2, 4 }, { 3, -1, 0.5 } })
    local lo, hi = wick.aminmax(m, { dim = 2 })
    near(lo, { 1, -1 })
    near(hi, { 4, 3 })
    assert.are.equal(-1, lo:min():item())
    assert.are.equal(1, lo:max():item())
    assert.are.equal("function", type(lo.min))
    local h = wick.histogram(T({ 1, 2, 1 }), { bins = 2 })
    near(h.hist, { 2, 1 })
    near(h.bin_edges, { 1, 1.5, 2 })
  end)

  it("einsum's sublist form", function()
    local A = wick.arange(6, F64):reshape(2, 3) * 0.25 - 0.3
    local B = wick.arange(12, F64):reshape(4, 3) * 0.1 + 0.05
    local ab = { 0.027500000000000004, -0.017499999999999988, -0.0625, -0.10749999999999998, 0.365, 0.995, 1.625, 2.255 }
    near(wick.einsum(A, { 0, 1 }, B, { 2, 1 }), ab, { 2, 4 })
    near(wick.einsum(A, { 0, 1 }, B, { 2, 1 }, { 2, 0 }),
      { 0.027500000000000004, 0.365, -0.017499999999999988, 0.995, -0.0625, 1.625, -0.10749999999999998, 2.255 }, { 4, 2 })
    near(wick.einsum(A, { 0, 1 }, { 1 }), { 0.15000000000000002, 0.6499999999999999, 1.15 })
    -- 30 is 'e', after the capitals: the implicit output is B's dim, then A's
    near(wick.einsum(A, { 30, 1 }, B, { 2, 1 }),
      { 0.027500000000000004, 0.365, -0.017499999999999988, 0.995, -0.0625, 1.625, -0.10749999999999998, 2.255 }, { 4, 2 })
    local C = wick.arange(24, F64):reshape(2, 3, 4) * 0.1
    near(wick.einsum(C, { "...", 1 }, wick.full({ 4 }, 0.5, F64), { 1 }, { "..." }),
      { 0.30000000000000004, 1.1, 1.9000000000000001, 2.7, 3.5000000000000004, 4.3 }, { 2, 3 })
    support.assert_error_has(function() return wick.einsum(A, { 0, 52 }) end,
      "einsum: subscript in subscript list is not within the valid range [0, 52)")
    support.assert_error_has(function() return wick.einsum(A, { 0, 1 }, B) end, "einsum: expected a list of subscripts")
    support.assert_error_has(function() return wick.einsum(A) end, "einsum: must specify the equation string")
  end)

  it("histogramdd: counts, edges, weights, density, as PyTorch's", function()
    local pts = T({ { 0, 0 }, { 1, 1 }, { 2, 0.5 }, { 0.5, 2 }, { 1.5, 1.5 }, { 2, 2 } })
    local hist, edges = wick.histogramdd(pts, 2)
    near(hist, { 1, 1, 1, 3 }, { 2, 2 })
    assert.are.equal(2, #edges)
    near(edges[1], { 0, 1, 2 })
    near(edges[2], { 0, 1, 2 })
    local r = wick.histogramdd { input = pts, bins = { 2, 3 }, range = { 0, 2, 0, 3 }, density = true }
    near(r.hist, { 0.16666666666666666, 0, 0.16666666666666666, 0.16666666666666666, 0.3333333333333333,
      0.16666666666666666 }, { 2, 3 })
    near(r.bin_edges[2], { 0, 1, 2, 3 })
    near(wick.histogramdd(pts, { T({ 0, 1, 2 }), T({ 0, 0.6, 2.5 }) }, { weight = T({ 1, 2, 3, 4, 5, 6 }) }),
      { 1, 4, 3, 13 })
    local p = T({ { 0.1, 0.2, 0.3 }, { 0.3, 0.1, 0.9 }, { 0.9, 0.5, 0.6 }, { 0.45, 0.7, 0.35 } })
    local h3, e3 = wick.histogramdd(p, { 2, 1, 3 }, { density = true })
    near(h3, { 10.416666666666666, 0.0, 5.208333333333332, 0.0, 5.208333333333335, 0.0 }, { 2, 1, 3 }, 1e-14)
    near(e3[3], { 0.3, 0.5, 0.7, 0.9 })
    -- float32 points: edges of that dtype
    local h32, e32 = wick.histogramdd(pts:float(), 3)
    assert.are.equal("float32", h32.dtype)
    near(h32, { 1, 0, 1, 0, 1, 0, 1, 0, 2 })
    near(e32[1], { 0.0, 0.6666666865348816, 1.3333332538604736, 2.0 }, nil, 0)
    -- an empty range widened by 0.5; no points: [0, 1]
    local _, ew = wick.histogramdd(wick.ones(3, 2, F64), 2)
    near(ew[1], { 0.5, 1, 1.5 })
    local he, ee = wick.histogramdd(wick.zeros(0, 2, F64), 2)
    near(he, { 0, 0, 0, 0 })
    near(ee[2], { 0, 0.5, 1 })
  end)

  it("histogramdd's errors", function()
    local pts = T({ { 0, 0 }, { 1, 1 }, { 2, 0.5 } })
    support.assert_error_has(function() return wick.histogramdd(pts, { 2, 2, 2 }) end,
      "histogramdd: The size of bins must be equal to the innermost dimension of the input.")
    support.assert_error_has(function() return wick.histogramdd(pts:long(), 2) end, "histogramdd: \"histogramdd\" not implemented for 'int64'")
    support.assert_error_has(function() return wick.histogramdd(pts, 2, { range = { 0, 1 } }) end,
      "histogramdd: for a 2-dimensional histogram range should have 4 elements, but got 2")
    support.assert_error_has(function() return wick.histogramdd(pts, 0) end, "histogramdd: bins must be > 0, but got 0 for dimension 1")
    support.assert_error_has(function() return wick.histogramdd(pts, 2, { weight = wick.ones(2, F64) }) end,
      "histogramdd: if weight tensor is provided it should have the same shape as the input tensor excluding its innermost dimension")
    support.assert_error_has(function() return wick.histogramdd(pts, 2, { weight = wick.ones(3) }) end,
      "input tensor and weight tensor should have the same dtype")
    support.assert_error_has(function() return wick.histogramdd(T({ 1, 2 }), 2) end, "histogramdd: input tensor should have at least 2 dimensions")
    support.assert_error_has(function() return wick.histogramdd(pts) end, "histogramdd: missing required argument 'bins'")
    support.assert_error_has(function() return wick.histogramdd(pts, 2, { range = { 1, 0, 0, 1 } }) end,
      "histogramdd: min should not exceed max, but got min 1 max 0 for dimension 1")
    support.assert_error_has(function() return wick.histogramdd(pts, { T({ 0, 1 }) }) end,
      "histogramdd: expected 2 sequences of bin edges for a 2-dimensional histogram but got 1")
    support.assert_error_has(function() return wick.histogramdd(pts, { T({ 0, 1 }), wick.tensor({ 0, 1 }) }) end,
      "input tensor and bins tensors should have the same dtype")
    support.assert_error_has(function() return wick.histogramdd(pts, 2, { bogus = 1 }) end, "histogramdd: unknown option 'bogus'")
    local nan = T({ { 0 / 0, 1 }, { 0, 0 } })
    support.assert_error_has(function() return wick.histogramdd(nan, 2) end, "is not finite")
  end)

  it("t:diagonal's options: unknown ones and a table beside positions are errors", function()
    local z = wick.arange(6, F64):reshape(2, 3)
    near(z:diagonal { offset = 1 }, { 1, 5 })
    near(z:diagonal(0, { dim1 = 2, dim2 = 1 }), { 0, 4 })
    near(wick.diagonal { input = z, offset = -1, dim1 = 2, dim2 = 1 }, { 1, 5 })
    support.assert_error_has(function() return z:diagonal { offset = 0, dim1 = 1, dim2 = 2, bogus = 1 } end,
      "diagonal: unknown option 'bogus'")
    support.assert_error_has(function() return z:diagonal({ offset = 0 }, 1, 2) end,
      "diagonal: either an options table or positional arguments")
    support.assert_error_has(function() return z:diagonal(0, 1, 2, { offset = 1 }) end,
      "diagonal: argument 'offset' given both by position and as an option")
  end)
end)
