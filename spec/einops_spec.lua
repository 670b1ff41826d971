-- wick.einops (lua/wick/einops.lua): the einops package's operations, checked
-- against the reshape / permute / reduction / expand each pattern means, the
-- patterns of vit-pytorch and lucidrains-style transformer code among them.
local wick = require("wick")
local einops = wick.einops
local support = require("spec.support")

local function same(a, b)
  assert.are.same(b:size(), a:size())
  assert.are.equal(0, (a:double() - b:double()):abs():max():item())
end

describe("wick.einops", function()
  local x = wick.arange(2 * 3 * 4 * 6):reshape(2, 3, 4, 6):float()

  it("rearrange: permutes, splits and merges axes (ViT's patch embedding)", function()
    same(einops.rearrange(x, "b c h w -> b h w c"), x:permute(1, 3, 4, 2))
    same(einops.rearrange(x, "b c (h p1) (w p2) -> b (h w) (p1 p2 c)", { p1 = 2, p2 = 3 }),
      x:reshape(2, 3, 2, 2, 2, 3):permute(1, 3, 5, 4, 6, 2):reshape(2, 4, 18))
    same(einops.rearrange(x, "b c h w -> b (c h w)"), x:reshape(2, 72))
    -- attention heads: b n (h d) -> b h n d
    local qkv = wick.randn(2, 5, 8)
    same(einops.rearrange(qkv, "b n (h d) -> b h n d", { h = 2 }), qkv:reshape(2, 5, 2, 4):permute(1, 3, 2, 4))
    same(einops.rearrange(einops.rearrange(qkv, "b n (h d) -> b h n d", { h = 2 }), "b h n d -> b n (h d)"), qkv)
    -- ellipsis, and size-1 axes
    same(einops.rearrange(x, "b ... -> b (...)"), x:reshape(2, 72))
    same(einops.rearrange(x, "... h w -> ... (h w)"), x:reshape(2, 3, 24))
    same(einops.rearrange(x, "b c h w -> b c 1 h w"), x:unsqueeze(3))
    same(einops.rearrange(x:narrow(2, 1, 1), "b 1 h w -> b h w"), x:select(2, 1))
    same(einops.rearrange(x, "b c h w -> b c () h w"), x:unsqueeze(3))
    -- a list of tensors is stacked first
    same(einops.rearrange({ x[1], x[2] }, "n c h w -> n c h w"), x)
  end)

  it("reduce: mean, sum, max, min over the axes the right side drops, and pooling", function()
    same(einops.reduce(x, "b c h w -> b c", "mean"), x:mean({ 3, 4 }))
    same(einops.reduce(x, "b c h w -> b c", "sum"), x:sum({ 3, 4 }))
    same(einops.reduce(x, "b c h w -> b () () c", "max"), x:amax({ 3, 4 }):reshape(2, 1, 1, 3))
    same(einops.reduce(x, "b c h w -> c", "min"), x:amin({ 1, 3, 4 }))
    -- 2x2 max pooling
    same(einops.reduce(x, "b c (h h2) (w w2) -> b c h w", "max", { h2 = 2, w2 = 2 }), wick.nn.functional.max_pool2d(x, 2))
    support.assert_error_has(function() einops.reduce(x, "b c h w -> b", "median") end, "unknown reduction 'median'")
    -- any / all, and a function of the reduced dims (WeightStandardizedConv2d's partial(torch.var, unbiased=False))
    assert.are.same({ true, false }, einops.reduce(wick.tensor({ { 0, 1 }, { 0, 0 } }):ne(0), "a b -> a", "any"):totable())
    assert.are.same({ false, true }, einops.reduce(wick.tensor({ { 0, 1 }, { 1, 1 } }):ne(0), "a b -> a", "all"):totable())
    local w = wick.randn(4, 2, 3, 3)
    local var = einops.reduce(w, "o ... -> o 1 1 1", function(t, dims) return t:var(dims, { unbiased = false }) end)
    same(var, w:var({ 2, 3, 4 }, { unbiased = false, keepdim = true }))
    support.assert_error_has(function() einops.reduce(w, "o ... -> o", function() return 3 end) end, "returned 3, not a tensor")
  end)

  it("repeat_: new axes copied (the class token), anonymous sizes", function()
    local cls = wick.randn(1, 1, 4)
    same(einops.repeat_(cls, "1 1 d -> b 1 d", { b = 3 }), cls:expand(3, 1, 4))
    same(einops["repeat"](wick.ones(3), "d -> b n d", { b = 2, n = 4 }), wick.ones(2, 4, 3))
    local img = wick.arange(4):reshape(2, 2):float()
    same(einops.repeat_(img, "h w -> (h 2) (w 2)"), img:repeat_interleave(2, 1):repeat_interleave(2, 2))
    same(einops.repeat_(img, "h w -> h w c", { c = 3 }), img:unsqueeze(3):expand(2, 2, 3))
    support.assert_error_has(function() einops.repeat_(img, "h w -> h w c") end, "the new axis 'c' needs its size")
  end)

  it("is differentiable", function()
    local a = wick.randn(2, 6, { requires_grad = true })
    einops.reduce(einops.rearrange(a, "b (h d) -> b h d", { h = 2 }), "b h d -> b h", "sum"):sum():backward()
    same(a.grad, wick.ones(2, 6))
  end)

  it("pack / unpack, einsum with names, parse_shape", function()
    local cls, tokens = wick.randn(2, 4), wick.randn(2, 3, 5, 4)
    local packed, shapes = einops.pack({ cls, tokens }, "b * d")
    assert.are.same({ 2, 16, 4 }, packed:size())
    assert.are.same({ {}, { 3, 5 } }, shapes)
    local back = einops.unpack(packed, shapes, "b * d")
    same(back[1], cls)
    same(back[2], tokens)
    local q, k = wick.randn(2, 3, 4), wick.randn(2, 5, 4)
    assert.is_true((einops.einsum(q, k, "b i d, b j d -> b i j") - q:bmm(k:transpose(2, 3))):abs():max():item() < 1e-5)
    assert.are.same({ b = 2, h = 4, w = 6 }, einops.parse_shape(x, "b _ h w"))
  end)

  it("Rearrange and Reduce layers (einops.layers.torch) in a Sequential", function()
    local net = wick.nn.Sequential(einops.layers.torch.Rearrange("b c (h p1) (w p2) -> b (h w) (p1 p2 c)", { p1 = 2, p2 = 2 }),
      wick.nn.Linear(12, 5), einops.Reduce("b n d -> b d", "mean"))
    assert.are.same({ 2, 5 }, net(x):size())
    -- einops' repr, axis lengths included
    assert.is_truthy(tostring(net):find("Rearrange('b c (h p1) (w p2) -> b (h w) (p1 p2 c)', p1=2, p2=2)", 1, true))
    assert.is_truthy(tostring(net):find("Reduce('b n d -> b d', 'mean')", 1, true))
  end)

  it("says what is wrong with a pattern", function()
    support.assert_error_has(function() einops.rearrange(x, "b c h -> b") end, "left side has 3 dimensions, the tensor 4")
    support.assert_error_has(function() einops.rearrange(x, "b c h w -> b c h") end, "the axis 'w' is on the left only")
    support.assert_error_has(function() einops.rearrange(x, "b c (h p) w -> b c h p w") end, "two axes of unknown size")
    support.assert_error_has(function() einops.rearrange(x, "b c (h p) w -> b c h p w", { p = 5 }) end, "does not split")
    support.assert_error_has(function() einops.rearrange(x, "b c h w -> b c h w z") end, "the axis 'z' is on the right only")
    support.assert_error_has(function() einops.rearrange(x, "b c h w") end, "has no '->'")
    support.assert_error_has(function() einops.rearrange(x, "b c (h w -> b") end, "unbalanced '('")
    support.assert_error_has(function() einops.rearrange(x, "b b h w -> b h w") end, "appears twice")
    support.assert_error_has(function() einops.rearrange(x, "b c h w -> b c h w", { c = 0.5 }) end, "einops.rearrange")
    support.assert_error_has(function() einops.pack({ x }, "b d") end, "needs one '*'")
  end)
end)
