-- The losses, random activations, unpooling and power-average pooling added
-- after the first release: each value against a direct computation of the
-- formula in plain Lua loops (CTC against the sum over every alignment), each
-- gradient by gradcheck in float64, each argument form (PyTorch's positional
-- order, the options table, the modules), and clean errors at the caller's line.
-- Class indices are 1-based (PyTorch's + 1): multilabel_margin_loss pads its
-- targets with 0 (PyTorch's -1), ctc_loss's blank defaults to 1 (PyTorch's 0).
local wick = require("wick")
local nn = wick.nn
local F = nn.functional
local support = require("spec.support")
local assert_close, error_of, assert_contains = support.assert_close, support.error_of, support.assert_contains

local F64 = { dtype = "float64" }
local I = support.I

local seq = support.seq -- deterministic float64 values
local function reduced(per, reduction)
  if reduction == "none" then return per end
  local s = 0
  for i = 1, #per do s = s + per[i] end
  if reduction == "sum" then return s end
  return s / #per
end
-- an error raised at this file's line, naming fn
local function assert_user_error(f, fn, piece)
  local msg = error_of(f)
  assert_contains(msg, "losses_extra_spec.lua:")
  assert_contains(msg, fn)
  if piece then assert_contains(msg, piece) end
end
local REDUCTIONS = { "mean", "sum", "none" }

describe("multi_margin_loss", function()
  local x = seq({ 4, 5 }, 7, 13, 6, 5)
  local t = I({ 1, 5, 3, 3 })
  local w = wick.tensor({ 0.5, 1, 2, 0.25, 1.5 }, F64)
  local function direct(p, margin, weight, reduction)
    local xs, ts = x:totable(), t:totable()
    local per = {}
    for n = 1, 4 do
      local y, s = ts[n], 0
      for j = 1, 5 do
        if j ~= y then
          local z = math.max(0, margin - xs[n][y] + xs[n][j]) ^ p
          s = s + z * (weight and weight[y] or 1)
        end
      end
      per[n] = s / 5
    end
    return reduced(per, reduction)
  end

  it("matches the formula for p = 1 and 2, margin, weight and every reduction", function()
    for _, red in ipairs(REDUCTIONS) do
      assert_close(F.multi_margin_loss(x, t, { reduction = red }), direct(1, 1, nil, red))
      assert_close(F.multi_margin_loss(x, t, 2, 0.7, w, { reduction = red }), direct(2, 0.7, w:totable(), red))
      assert_close(F.multi_margin_loss(x, t, { p = 2, margin = 0.7, weight = w, reduction = red }),
        direct(2, 0.7, w:totable(), red))
      assert_close(nn.MultiMarginLoss(2, 0.7, w, { reduction = red })(x, t), direct(2, 0.7, w:totable(), red))
      assert_close(nn.MultiMarginLoss({ p = 2, margin = 0.7, weight = w, reduction = red })(x, t),
        direct(2, 0.7, w:totable(), red))
    end
    -- one sample (C) with a 0-dim target; PyTorch's number
    local one = F.multi_margin_loss(wick.tensor({ 0.1, 0.2, 0.4, 0.8 }, F64), wick.tensor(4, { dtype = "int64" }),
      { reduction = "none" })
    assert.are.same({}, support.shape_of(one))
    assert_close(F.multi_margin_loss(wick.tensor({ 0.1, 0.2, 0.4, 0.8 }, F64), wick.tensor(4, { dtype = "int64" })),
      0.325) -- PyTorch (0-based target 3): (0.3 + 0.4 + 0.6) / 4
  end)

  it("has the formula's gradient", function()
    support.gradcheck(function(v) return F.multi_margin_loss(v, t, 2, 0.7, w, { reduction = "none" }) end, { x })
    support.gradcheck(function(v) return F.multi_margin_loss(v, t, { reduction = "sum" }) end, { x })
  end)

  it("rejects bad input at the caller's line", function()
    assert_user_error(function() local r = F.multi_margin_loss(x, I({ 0, 1, 2, 3 })); return r end,
      "multi_margin_loss", "out of range")
    assert_user_error(function() local r = F.multi_margin_loss(x, I({ 6, 1, 2, 3 })); return r end,
      "multi_margin_loss", "out of range")
    assert_user_error(function() local r = F.multi_margin_loss(x, I({ 1, 2 })); return r end, "multi_margin_loss", "target size")
    assert_user_error(function() local r = F.multi_margin_loss(x, t, 3); return r end, "multi_margin_loss", "p == 1")
    assert_user_error(function() local r = F.multi_margin_loss(x, t, { reduction = "avg" }); return r end,
      "multi_margin_loss", "reduction")
    assert_user_error(function() local r = F.multi_margin_loss(x, t, 1, 1, wick.ones(3, F64)); return r end,
      "multi_margin_loss", "weight")
    assert_user_error(function() local r = F.multi_margin_loss(wick.zeros(2, 3, 4), I({ 1, 1 })); return r end,
      "multi_margin_loss", "3-D")
    assert_user_error(function() local r = nn.MultiMarginLoss({ reduction = "avg" }); return r end, "MultiMarginLoss")
  end)

  it("gives an empty batch's sum, none, and a NaN mean (PyTorch's mean there is unset memory)", function()
    local e = wick.zeros(0, 4)
    local mean = F.multi_margin_loss(e, I({})):item()
    assert.is_true(mean ~= mean)
    assert.are.equal(0, F.multi_margin_loss(e, I({}), { reduction = "sum" }):item())
    assert.are.same({ 0 }, support.shape_of(F.multi_margin_loss(e, I({}), { reduction = "none" })))
  end)
end)

describe("multilabel_margin_loss", function()
  local x = seq({ 4, 5 }, 7, 13, 6, 5)
  -- 1-based classes, each row's list ending at its first 0 (what follows is ignored)
  local t = I({ { 1, 3, 0, 2, 1 }, { 5, 0, 4, 4, 4 }, { 0, 1, 1, 1, 1 }, { 2, 1, 1, 3, 5 } })
  local function direct(reduction)
    local xs, ts, per = x:totable(), t:totable(), {}
    for n = 1, 4 do
      local targets, is = {}, {}
      for j = 1, 5 do
        if ts[n][j] < 1 then break end
        targets[#targets + 1] = ts[n][j]
        is[ts[n][j]] = true
      end
      local s = 0
      for _, y in ipairs(targets) do
        for k = 1, 5 do
          if not is[k] then s = s + math.max(0, 1 - (xs[n][y] - xs[n][k])) end
        end
      end
      per[n] = s / 5
    end
    return reduced(per, reduction)
  end

  it("matches the formula for every reduction, batched and one sample", function()
    for _, red in ipairs(REDUCTIONS) do
      assert_close(F.multilabel_margin_loss(x, t, { reduction = red }), direct(red))
      assert_close(nn.MultiLabelMarginLoss({ reduction = red })(x, t), direct(red))
      assert_close(nn.MultiLabelMarginLoss(nil, nil, red)(x, t), direct(red))
    end
    assert_close(F.multilabel_margin_loss(x[1], t[1], { reduction = "none" }), direct("none")[1])
  end)

  it("has the formula's gradient", function()
    support.gradcheck(function(v) return F.multilabel_margin_loss(v, t, { reduction = "none" }) end, { x })
  end)

  it("rejects bad input at the caller's line", function()
    assert_user_error(function() local r = F.multilabel_margin_loss(x, I({ { 6, 0, 0, 0, 0 } })); return r end,
      "multilabel_margin_loss", "target size")
    local bad = I({ { 6, 0, 0, 0, 0 }, { 1, 0, 0, 0, 0 }, { 1, 0, 0, 0, 0 }, { 1, 0, 0, 0, 0 } })
    assert_user_error(function() local r = F.multilabel_margin_loss(x, bad); return r end,
      "multilabel_margin_loss", "out of range")
    assert_user_error(function() local r = F.multilabel_margin_loss(x, x); return r end, "multilabel_margin_loss", "int64")
  end)
end)

describe("multilabel_soft_margin_loss", function()
  local x = seq({ 3, 4 }, 5, 11, 5, 3)
  local y = wick.tensor({ { 1, 0, 1, 0 }, { 0, 0, 1, 1 }, { 1, 1, 1, 0 } }, F64)
  local w = wick.tensor({ 0.5, 1, 2, 0.25 }, F64)
  local function direct(weight, reduction)
    local xs, ys, per = x:totable(), y:totable(), {}
    local function logsig(v) return -math.log(1 + math.exp(-v)) end
    for n = 1, 3 do
      local s = 0
      for c = 1, 4 do
        s = s - (ys[n][c] * logsig(xs[n][c]) + (1 - ys[n][c]) * logsig(-xs[n][c])) * (weight and weight[c] or 1)
      end
      per[n] = s / 4
    end
    return reduced(per, reduction)
  end
  it("matches the formula, with weight, for every reduction", function()
    for _, red in ipairs(REDUCTIONS) do
      assert_close(F.multilabel_soft_margin_loss(x, y, { reduction = red }), direct(nil, red))
      assert_close(F.multilabel_soft_margin_loss(x, y, w, { reduction = red }), direct(w:totable(), red))
      assert_close(nn.MultiLabelSoftMarginLoss(w, { reduction = red })(x, y), direct(w:totable(), red))
    end
  end)
  it("has the formula's gradient (input, target and weight)", function()
    support.gradcheck(function(a, b, c) return F.multilabel_soft_margin_loss(a, b, c, { reduction = "none" }) end, { x, y, w })
  end)
  it("rejects bad input at the caller's line", function()
    assert_user_error(function() local r = F.multilabel_soft_margin_loss(x, y, { reduction = "avg" }); return r end,
      "multilabel_soft_margin_loss", "reduction")
    assert_user_error(function() local r = F.multilabel_soft_margin_loss(wick.tensor(1), wick.tensor(1)); return r end,
      "multilabel_soft_margin_loss", "0-dim")
  end)
end)

describe("hinge_embedding_loss", function()
  local x = seq({ 3, 4 }, 5, 11, 5, 3)
  local y = wick.tensor({ { 1, -1, 1, -1 }, { -1, -1, 1, 1 }, { 1, 1, -1, -1 } }, F64)
  local function direct(margin, reduction)
    local xs, ys, per = x:totable(), y:totable(), {}
    for n = 1, 3 do for c = 1, 4 do
      per[#per + 1] = ys[n][c] == 1 and xs[n][c] or math.max(0, margin - xs[n][c])
    end end
    if reduction == "none" then
      local rowsv = {}
      for n = 1, 3 do rowsv[n] = { per[4 * n - 3], per[4 * n - 2], per[4 * n - 1], per[4 * n] } end
      return rowsv
    end
    return reduced(per, reduction)
  end
  it("matches the formula for every reduction and margin", function()
    for _, red in ipairs(REDUCTIONS) do
      assert_close(F.hinge_embedding_loss(x, y, { reduction = red }), direct(1, red))
      assert_close(F.hinge_embedding_loss(x, y, 0.5, { reduction = red }), direct(0.5, red))
      assert_close(nn.HingeEmbeddingLoss(0.5, { reduction = red })(x, y), direct(0.5, red))
    end
  end)
  it("has the formula's gradient", function()
    support.gradcheck(function(v) return F.hinge_embedding_loss(v, y, 0.7, { reduction = "none" }) end, { x })
  end)
end)

describe("gaussian_nll_loss", function()
  local x = seq({ 3, 4 }, 5, 11, 5, 3)
  local target = seq({ 3, 4 }, 3, 7, 3, 4)
  local var = seq({ 3, 4 }, 7, 9, -1, 6) -- positive
  local function direct(v_of, full, eps, reduction)
    local xs, ts, per = x:totable(), target:totable(), {}
    for n = 1, 3 do
      local row = {}
      for c = 1, 4 do
        local v = math.max(v_of(n, c), eps)
        row[c] = 0.5 * (math.log(v) + (xs[n][c] - ts[n][c]) ^ 2 / v) + (full and 0.5 * math.log(2 * math.pi) or 0)
        per[#per + 1] = row[c]
      end
      if reduction == "none" then per[n] = row end
    end
    if reduction == "none" then return { per[1], per[2], per[3] } end
    return reduced(per, reduction)
  end
  it("matches the formula for each shape of var, full, eps and every reduction", function()
    local vs = var:totable()
    local v1 = wick.tensor({ 0.5, 2, 1e-9 }, F64)
    local v1s = v1:totable()
    for _, red in ipairs(REDUCTIONS) do
      assert_close(F.gaussian_nll_loss(x, target, var, { reduction = red }),
        direct(function(n, c) return vs[n][c] end, false, 1e-6, red))
      assert_close(F.gaussian_nll_loss(x, target, var, true, 0.4, red),
        direct(function(n, c) return vs[n][c] end, true, 0.4, red))
      assert_close(F.gaussian_nll_loss(x, target, v1, { reduction = red }),
        direct(function(n) return v1s[n] end, false, 1e-6, red))
      assert_close(F.gaussian_nll_loss(x, target, v1:view(3, 1), { reduction = red }),
        direct(function(n) return v1s[n] end, false, 1e-6, red))
      assert_close(F.gaussian_nll_loss(x, target, 0.3, { reduction = red }),
        direct(function() return 0.3 end, false, 1e-6, red))
      assert_close(nn.GaussianNLLLoss({ full = true, eps = 0.4, reduction = red })(x, target, var),
        direct(function(n, c) return vs[n][c] end, true, 0.4, red))
    end
  end)
  it("has the formula's gradient, the clamp passing var's gradient through", function()
    support.gradcheck(function(a, b, v) return F.gaussian_nll_loss(a, b, v, { full = true, reduction = "none" }) end,
      { x, target, var })
    -- var below eps: the loss is at eps, var's gradient is the one at eps (PyTorch's)
    local v = wick.tensor({ 0.01, 0.02 }, F64):requires_grad_()
    local a = wick.tensor({ 0.3, -0.2 }, F64)
    F.gaussian_nll_loss(a, wick.zeros(2, F64), v, { eps = 0.5, reduction = "sum" }):backward()
    assert_close(v.grad, { 0.5 * (1 / 0.5 - 0.09 / 0.25), 0.5 * (1 / 0.5 - 0.04 / 0.25) })
  end)
  it("rejects bad input at the caller's line", function()
    assert_user_error(function() local r = F.gaussian_nll_loss(x, target, wick.ones(4, F64)); return r end,
      "gaussian_nll_loss", "incorrect size")
    assert_user_error(function() local r = F.gaussian_nll_loss(x, target, -var); return r end,
      "gaussian_nll_loss", "negative")
    assert_user_error(function() local r = F.gaussian_nll_loss(x, target, var, { reduction = "avg" }); return r end,
      "gaussian_nll_loss", "reduction")
    assert_user_error(function() local r = F.gaussian_nll_loss(x, target, "1"); return r end, "gaussian_nll_loss", "var")
  end)
end)

describe("nn.PoissonNLLLoss", function()
  it("is F.poisson_nll_loss with PyTorch's positional and keyword arguments", function()
    local x = seq({ 3, 4 }, 5, 11, 5, 3):abs() + 0.1
    local y = seq({ 3, 4 }, 3, 7, 0, 2)
    for _, red in ipairs(REDUCTIONS) do
      local want = F.poisson_nll_loss(x, y, { log_input = false, full = true, eps = 1e-3, reduction = red })
      assert_close(nn.PoissonNLLLoss(false, true, nil, 1e-3, nil, red)(x, y), want:totable())
      assert_close(nn.PoissonNLLLoss({ log_input = false, full = true, eps = 1e-3, reduction = red })(x, y), want:totable())
    end
    assert_close(nn.PoissonNLLLoss()(x, y), F.poisson_nll_loss(x, y):item())
  end)
end)

describe("ctc_loss", function()
  local T, N, C = 5, 3, 3
  local logits = seq({ T, N, C }, 7, 17, 8, 6)
  local lp = logits:log_softmax(3)
  -- padded targets (0 past each length: ignored), blank 1
  local targets = I({ { 2, 3, 0 }, { 3, 3, 0 }, { 0, 0, 0 } })
  local il, tl = { 5, 4, 3 }, { 2, 2, 0 }
  -- -log of the sum over every path of length il whose collapse (merge repeats, drop blanks) is the target
  local function brute(lpt, n, input_len, target, blank)
    local total = 0
    local path = {}
    local function visit(t)
      if t > input_len then
        local out, prev = {}, nil
        for i = 1, input_len do
          if path[i] ~= prev and path[i] ~= blank then out[#out + 1] = path[i] end
          prev = path[i]
        end
        if #out ~= #target then return end
        for i = 1, #out do if out[i] ~= target[i] then return end end
        local s = 0
        for i = 1, input_len do s = s + lpt[i][n][path[i]] end
        total = total + math.exp(s)
        return
      end
      for c = 1, C do path[t] = c; visit(t + 1) end
    end
    visit(1)
    return -math.log(total)
  end
  local lpt = lp:totable()
  local want = { brute(lpt, 1, 5, { 2, 3 }, 1), brute(lpt, 2, 4, { 3, 3 }, 1), brute(lpt, 3, 3, {}, 1) }

  it("is the sum over alignments, for padded and concatenated targets, lengths as tables or tensors", function()
    assert_close(F.ctc_loss(lp, targets, il, tl, { reduction = "none" }), want)
    assert_close(F.ctc_loss(lp, I({ 2, 3, 3, 3 }), I(il), I(tl), 1, "none"), want)
    assert_close(F.ctc_loss(lp, targets, il, tl, { reduction = "sum" }), want[1] + want[2] + want[3])
    -- mean: each loss over its target length (at least 1), then the batch mean (PyTorch's)
    assert_close(F.ctc_loss(lp, targets, il, tl), (want[1] / 2 + want[2] / 2 + want[3]) / 3)
    assert_close(nn.CTCLoss()(lp, targets, il, tl), (want[1] / 2 + want[2] / 2 + want[3]) / 3)
    assert_close(nn.CTCLoss(1, "sum")(lp, targets, I(il), tl), want[1] + want[2] + want[3])
    -- unbatched (T, C)
    local one = F.ctc_loss(lp:select(2, 1), I({ 2, 3 }), 5, 2, { reduction = "none" })
    assert.are.same({}, support.shape_of(one))
    assert_close(one, want[1])
  end)

  it("takes another blank", function()
    local t3 = I({ { 1, 2, 0 }, { 2, 2, 0 }, { 0, 0, 0 } })
    assert_close(F.ctc_loss(lp, t3, il, tl, { blank = 3, reduction = "none" }),
      { brute(lpt, 1, 5, { 1, 2 }, 3), brute(lpt, 2, 4, { 2, 2 }, 3), brute(lpt, 3, 3, {}, 3) })
    assert_close(nn.CTCLoss({ blank = 3, reduction = "none" })(lp, t3, il, tl)[1], brute(lpt, 1, 5, { 1, 2 }, 3))
  end)

  it("gives inf where no alignment exists, 0 with zero_infinity", function()
    -- 3 repeated labels need 5 steps
    local l = F.ctc_loss(lp, I({ { 2, 2, 2 }, { 2, 0, 0 }, { 3, 0, 0 } }), { 4, 2, 1 }, { 3, 1, 1 }, { reduction = "none" })
    local v = l:totable()
    assert.are.equal(math.huge, v[1])
    assert_close(v[2], brute(lpt, 2, 2, { 2 }, 1))
    local z = lp:detach():requires_grad_()
    local lz = F.ctc_loss(z, I({ { 2, 2, 2 }, { 2, 0, 0 }, { 3, 0, 0 } }), { 4, 2, 1 }, { 3, 1, 1 },
      { reduction = "none", zero_infinity = true })
    assert.are.equal(0, lz:totable()[1])
    lz:sum():backward()
    local g = z.grad:select(2, 1):abs():sum():item()
    assert.are.equal(0, g)
  end)

  it("has the gradient of the sum over alignments through log_softmax, and PyTorch's for raw scores", function()
    support.gradcheck(function(v) return F.ctc_loss(v:log_softmax(3), I({ 2, 3, 3, 3 }), il, tl) end, { logits })
    support.gradcheck(function(v) return F.ctc_loss(v:log_softmax(3), targets, il, tl, { reduction = "none" }) end,
      { logits })
    -- scores that are not log-probabilities (crnn's preds): PyTorch 2.15's kernel adds
    -- exp(log_probs) to the true gradient; same loss, and its gradient
    local x = wick.sin(wick.arange(12, F64) * 0.7):view(4, 1, 3):requires_grad_(true)
    local l = F.ctc_loss(x, I({ { 2, 3 } }), { 4 }, { 2 })
    l:backward()
    assert.is_true(math.abs(l:item() - -1.794636760589125) < 1e-12)
    assert_close(x.grad:view(-1), { 0.3879, 0.5643, 1.3395, 0.9596, 0.4691, 0.3077, 0.0682, 0.0979, -0.0038, 0.4265,
      0.9645, 0.9251 }, 1e-4)
  end)

  it("rejects bad input at the caller's line", function()
    assert_user_error(function() local r = F.ctc_loss(lp, targets, il, tl, 4); return r end, "ctc_loss", "blank")
    assert_user_error(function() local r = F.ctc_loss(lp, targets, il, tl, 0); return r end, "ctc_loss", "blank")
    -- a target longer than the targets' width, input_lengths past T, too few targets concatenated
    assert_user_error(function() local r = F.ctc_loss(lp, targets, il, { 4, 2, 0 }); return r end, "ctc_loss", "at least 4")
    assert_user_error(function() local r = F.ctc_loss(lp, targets, { 6, 4, 3 }, tl); return r end, "ctc_loss", "at most 5")
    assert_user_error(function() local r = F.ctc_loss(lp, I({ 2, 3, 3 }), il, tl); return r end, "ctc_loss", "at least 4")
    assert_user_error(function() local r = F.ctc_loss(lp, targets, { 5, 4 }, tl); return r end, "ctc_loss", "input_lengths")
    assert_user_error(function() local r = F.ctc_loss(lp, targets, { 5, -1, 3 }, tl); return r end, "ctc_loss", "non-negative")
    assert_user_error(function() local r = F.ctc_loss(lp, I({ { 2, 4, 0 }, { 3, 3, 0 }, { 0, 0, 0 } }), il, tl); return r end,
      "ctc_loss", "out of range")
    -- a target equal to the blank: PyTorch's labels not moved up by 1 (0-padding after the lengths is fine)
    assert_user_error(function() local r = F.ctc_loss(lp, I({ { 1, 3, 0 }, { 2, 2, 0 }, { 0, 0, 0 } }), il, tl); return r end,
      "ctc_loss", "blank class 1")
    assert_user_error(function() local r = F.ctc_loss(lp, targets, il, tl, { blank = 3 }); return r end,
      "ctc_loss", "blank class 3")
    assert_user_error(function() local r = F.ctc_loss(lp, targets:to("float64") + 0.5, il, tl); return r end, "ctc_loss", "int64")
    -- (float targets of whole values are PyTorch's integers)
    assert.are.equal(F.ctc_loss(lp, targets, il, tl):item(), F.ctc_loss(lp, targets:to("float64"), il, tl):item())
    assert_user_error(function() local r = F.ctc_loss(lp, targets, il, tl, 1, "avg"); return r end, "ctc_loss", "reduction")
    assert_user_error(function() local r = F.ctc_loss(wick.zeros(4, 0, 3), I({}), {}, {}); return r end, "ctc_loss", "empty")
    assert_user_error(function() local r = nn.CTCLoss(0); return r end, "CTCLoss", "blank")
  end)

  it("handles empty targets and inputs of length 0", function()
    local l = F.ctc_loss(lp, I({ { 0 }, { 0 }, { 0 } }), { 0, 2, 5 }, { 0, 0, 0 }, { reduction = "none" }):totable()
    assert_close(l, { 0, brute(lpt, 2, 2, {}, 1), brute(lpt, 3, 5, {}, 1) })
  end)
end)

describe("rrelu", function()
  local x = seq({ 40, 50 }, 7, 13, 6, 5)
  it("uses the mean slope out of training", function()
    local want = {}
    for i, v in ipairs(support.values_of(x)) do want[i] = v >= 0 and v or v * 0.2 end
    assert_close(F.rrelu(x, 0.1, 0.3):reshape(-1), want)
    local m = nn.RReLU(0.1, 0.3)
    m:eval()
    assert_close(m(x):reshape(-1), want)
  end)
  it("draws a slope in [lower, upper] per negative element in training, whose gradient it is", function()
    local v = x:detach():requires_grad_()
    local y = F.rrelu(v, { lower = 0.1, upper = 0.3, training = true })
    y:sum():backward()
    local xs, ys, gs = support.values_of(x), support.values_of(y), support.values_of(v.grad)
    local lo, hi = math.huge, -math.huge
    for i = 1, #xs do
      if xs[i] > 0 then
        assert.are.equal(xs[i], ys[i]); assert.are.equal(1, gs[i])
      elseif xs[i] == 0 then -- (PyTorch's: at 0 the drawn slope, as for a negative element)
        assert.are.equal(0, ys[i]); assert.is_true(gs[i] >= 0.1 and gs[i] <= 0.3)
      else
        local a = ys[i] / xs[i]
        assert_close(gs[i], a)
        lo, hi = math.min(lo, a), math.max(hi, a)
      end
    end
    assert.is_true(lo >= 0.1 and hi <= 0.3 and hi - lo > 0.1)
    assert_user_error(function() local r = F.rrelu(x, 0.5, 0.1); return r end, "rrelu", "bound")
  end)
end)

describe("alpha_dropout", function()
  local alpha = 1.7580993408473766
  it("is the identity out of training and for p = 0", function()
    local x = seq({ 3, 4 }, 5, 11, 5, 3)
    assert.are.equal(x, F.alpha_dropout(x, 0.5))
    assert.are.equal(x, F.alpha_dropout(x, 0, true))
    local m = nn.AlphaDropout(0.2)
    m:eval()
    assert.are.equal(x, m(x))
  end)
  it("keeps elements as a x + b, sets the dropped ones to b - a alpha, keeping mean 0 and variance 1", function()
    local p = 0.3
    local a = 1 / math.sqrt((alpha * alpha * p + 1) * (1 - p))
    local b = alpha * a * p
    local x = wick.randn({ 200000 }, F64)
    local y = F.alpha_dropout(x, p, true)
    local xs, ys = x:totable(), y:totable()
    local dropped = 0
    for i = 1, 2000 do
      if math.abs(ys[i] - (b - a * alpha)) < 1e-12 then dropped = dropped + 1
      else assert_close(ys[i], a * xs[i] + b) end
    end
    assert.is_true(dropped > 450 and dropped < 750)
    assert.is_true(math.abs(y:mean():item()) < 0.02)
    assert.is_true(math.abs(y:var():item() - 1) < 0.03)
    assert.are.same({ 0, 0, 0 }, F.alpha_dropout(wick.ones(3, F64), 1, true):abs():totable())
  end)
  it("drops whole channels in feature_alpha_dropout", function()
    local x = wick.ones({ 8, 16, 5 }, F64)
    local y = nn.FeatureAlphaDropout(0.5)(x)
    local spread = (y:max(3) - y:min(3)):abs():max():item()
    assert.are.equal(0, spread)
  end)
end)

describe("max_unpool", function()
  local x = seq({ 2, 3, 6, 6 }, 7, 37, 18, 5)
  it("puts each pooled value back at its max_pool2d index (1-based flat), zeros elsewhere", function()
    local y, idx = F.max_pool2d(x, 2, { return_indices = true })
    local u = F.max_unpool2d(y, idx, 2)
    local us, ys, is = u:totable(), y:totable(), idx:totable()
    local want = wick.zeros(2, 3, 6, 6, F64):totable()
    for n = 1, 2 do for c = 1, 3 do for i = 1, 3 do for j = 1, 3 do
      local k = is[n][c][i][j] - 1
      want[n][c][math.floor(k / 6) + 1][k % 6 + 1] = ys[n][c][i][j]
    end end end end
    assert_close(us, want)
    assert_close(nn.MaxUnpool2d(2)(y, idx), want)
    assert_close(nn.MaxUnpool2d({ 2, 2 }, 2, 0)(y, idx, { 2, 3, 6, 6 }), want)
    -- output_size: a 7x7 plane, the indices read in it
    local u7 = F.max_unpool2d(y, idx, 2, { output_size = { 7, 7 } })
    assert.are.same({ 2, 3, 7, 7 }, support.shape_of(u7))
    assert_close(u7:sum(), y:sum():item())
    -- unbatched
    assert_close(F.max_unpool2d(y[1], idx[1], 2), want[1])
    support.gradcheck(function(v) return F.max_unpool2d(v, idx, 2) end, { y })
  end)
  it("unpools 1-D", function()
    local y = wick.tensor({ { { 5, 7, 9 } } }, F64)
    local idx = I({ { { 2, 4, 9 } } })
    assert_close(F.max_unpool1d(y, idx, 3), { { { 0, 5, 0, 7, 0, 0, 0, 0, 9 } } })
    assert_close(nn.MaxUnpool1d(3, 3)(y, idx), { { { 0, 5, 0, 7, 0, 0, 0, 0, 9 } } })
    assert_close(F.max_unpool1d(y[1], idx[1], 3, { output_size = { 9 } }), { { 0, 5, 0, 7, 0, 0, 0, 0, 9 } })
    support.gradcheck(function(v) return F.max_unpool1d(v, idx, 3) end, { y })
  end)
  it("rejects bad indices and sizes at the caller's line", function()
    local y = wick.ones(1, 1, 2, 2)
    assert_user_error(function() local r = F.max_unpool2d(y, I({ { { { 1, 2 }, { 3, 17 } } } }), 2); return r end,
      "max_unpool2d", "invalid max index")
    assert_user_error(function() local r = F.max_unpool2d(y, I({ { { { 0, 2 }, { 3, 4 } } } }), 2); return r end,
      "max_unpool2d", "invalid max index")
    assert_user_error(function() local r = F.max_unpool2d(y, I({ { { 1, 2 } } }), 2); return r end, "max_unpool2d", "shape")
    assert_user_error(function() local r = F.max_unpool2d(y, I({ { { { 1, 2 }, { 3, 4 } } } }), 2, { output_size = { 9, 9 } }); return r end,
      "max_unpool2d", "output_size")
    assert_user_error(function() local r = F.max_unpool2d(y, I({ { { { 1, 2 }, { 3, 4 } } } }), 2 ^ 40); return r end,
      "max_unpool2d", "too large")
  end)
end)

describe("lp_pool", function()
  local x = seq({ 1, 2, 5, 4 }, 7, 13, 0, 5) + 0.1
  local function direct(p, kh, kw, sh, sw)
    local xs = x:totable()
    local out = {}
    for c = 1, 2 do
      out[c] = {}
      for i = 0, math.floor((5 - kh) / sh) do
        out[c][i + 1] = {}
        for j = 0, math.floor((4 - kw) / sw) do
          local s = 0
          for a = 1, kh do for b = 1, kw do s = s + xs[1][c][i * sh + a][j * sw + b] ^ p end end
          out[c][i + 1][j + 1] = s ^ (1 / p)
        end
      end
    end
    return { out }
  end
  it("is the p-norm of each window", function()
    assert_close(F.lp_pool2d(x, 2, 2), direct(2, 2, 2, 2, 2))
    assert_close(F.lp_pool2d(x, 3, { 3, 2 }, 1), direct(3, 3, 2, 1, 1))
    assert_close(nn.LPPool2d(1.5, { 2, 3 }, { 1, 1 })(x), direct(1.5, 2, 3, 1, 1))
    assert_close(F.lp_pool2d(x, math.huge, 2), F.max_pool2d(x, 2):totable())
    local x1 = x:view(1, 2, 20)
    local pooled = F.lp_pool1d(x1, 2, 3, 2)
    local xs = x1:totable()
    local s = 0
    for k = 3, 5 do s = s + xs[1][2][k] ^ 2 end
    assert_close(pooled[1][2][2], math.sqrt(s))
    assert_close(nn.LPPool1d(2, 3, 2)(x1), pooled:totable())
    support.gradcheck(function(v) return F.lp_pool2d(v, 2, { 3, 2 }, 1) end, { x })
    support.gradcheck(function(v) return F.lp_pool1d(v, 3, 3, 2) end, { x1 })
  end)
  it("rejects norm_type 0 at the caller's line", function()
    assert_user_error(function() local r = F.lp_pool2d(x, 0, 2); return r end, "lp_pool2d", "norm_type")
  end)
end)

describe("the classic losses' PyTorch positional arguments", function()
  local quiet = function(fn) -- (size_average and reduce warn, as PyTorch's)
    local saved = io.stderr
    io.stderr = { write = function() end }
    local ok, r = pcall(fn)
    io.stderr = saved
    assert(ok, r)
    return r
  end
  local p = wick.tensor({ { 0.1, 0.9, 0.5 }, { 0.99, 0.01, 0.3 } })
  local t = wick.tensor({ { 0, 1, 0.2 }, { 1, 0, 0.7 } })

  it("weight, size_average, reduce, reduction by position mean what they mean in PyTorch (yunjey's VAE)", function()
    local sum = F.binary_cross_entropy(p, t, { reduction = "sum" }):item()
    local mean = F.binary_cross_entropy(p, t):item()
    assert.is_true(math.abs(sum - 6 * mean) < 1e-5)
    -- F.binary_cross_entropy(x_reconst, x, None, False): size_average=False is the sum
    assert.are.equal(sum, quiet(function() return F.binary_cross_entropy(p, t, nil, false):item() end))
    assert.are.equal(sum, F.binary_cross_entropy(p, t, nil, nil, nil, "sum"):item())
    local w = wick.tensor({ 1, 2, 3 })
    assert.are.equal(F.binary_cross_entropy(p, t, { weight = w, reduction = "sum" }):item(),
      quiet(function() return F.binary_cross_entropy(p, t, w, false):item() end))
    assert.are.equal(F.mse_loss(p, t, { reduction = "sum" }):item(), F.mse_loss(p, t, nil, nil, "sum"):item())
    assert.are.same(F.l1_loss(p, t, { reduction = "none" }):totable(), quiet(function() return F.l1_loss(p, t, nil, false):totable() end))
    local logp, y = wick.randn(4, 3):log_softmax(2), wick.tensor({ 1, 2, 3, 2 }, { dtype = "int64" })
    -- nll_loss(input, target, weight, size_average, ignore_index, reduce, reduction)
    assert.are.equal(F.nll_loss(logp, y, { ignore_index = 2 }):item(), F.nll_loss(logp, y, nil, nil, 2):item())
    assert.are.equal(F.cross_entropy(logp, y, { reduction = "sum", label_smoothing = 0.1 }):item(),
      F.cross_entropy(logp, y, nil, nil, nil, nil, "sum", 0.1):item())
    assert.are.equal(F.smooth_l1_loss(p, t, { beta = 0.5 }):item(), F.smooth_l1_loss(p, t, nil, nil, "mean", 0.5):item())
  end)

  it("refuses more arguments than PyTorch's and mixes of the two forms", function()
    support.assert_error_has(function() F.mse_loss(p, t, nil, nil, "sum", t, 1) end,
      "mse_loss: expected at most 4 positional argument(s) (size_average, reduce, reduction, weight), got 5")
    support.assert_error_has(function() F.mse_loss(p, t, "sum") end, "expected an options table as argument 3")
    support.assert_error_has(function() F.binary_cross_entropy(p, t, nil, nil, nil, "sum", { reduction = "mean" }) end,
      "given both by position and as an option")
    support.assert_error_has(function() F.binary_cross_entropy(p, t, nil, nil, nil, "total") end, "reduction")
  end)
end)
