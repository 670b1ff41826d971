-- nn.utils.rnn (lua/wick/nn/rnn_utils.lua): padding and packing, PyTorch's
-- layout of PackedSequence's fields worked out by hand, the packed forms
-- through the recurrent layers against one run per sequence, and the errors.
-- (The layers' packed outputs against PyTorch: spec/rnn_spec.lua.)
local wick = require("wick")
local nn = wick.nn
local R = nn.utils.rnn
local support = require("spec.support")

local function same(a, b) return a:size()[1] == b:size()[1] and a:eq(b):all() end
local function near(a, b, tol) return (a - b):abs():max():item() < (tol or 1e-12) end

describe("nn.utils.rnn", function()
  it("pad_sequence pads to the longest, time-major or batch-first, right or left", function()
    local a, b = wick.tensor({ 1, 2, 3 }), wick.tensor({ 4 })
    assert.are.same({ { 1, 4 }, { 2, 0 }, { 3, 0 } }, R.pad_sequence({ a, b }):tolist())
    assert.are.same({ { 1, 2, 3 }, { 4, -1, -1 } }, R.pad_sequence({ a, b }, true, -1):tolist())
    assert.are.same({ { 1, 2, 3 }, { 9, 9, 4 } },
      R.pad_sequence({ a, b }, { batch_first = true, padding_value = 9, padding_side = "left" }):tolist())
    -- trailing dimensions are kept, and the padding is differentiable
    local x = wick.ones(2, 3):requires_grad_()
    local p = R.pad_sequence({ x, wick.zeros(4, 3) })
    assert.are.same({ 4, 2, 3 }, p:size())
    p:sum():backward()
    assert.are.same({ { 1, 1, 1 }, { 1, 1, 1 } }, x.grad:tolist())
  end)

  it("pack_padded_sequence lays data out as PyTorch: step by step, longest first", function()
    -- batch-first [3 sequences, 4 steps]: sequence b's step t holds 10 * b + t
    local x = wick.tensor({ { 11, 12, 0, 0 }, { 21, 22, 23, 24 }, { 31, 0, 0, 0 } })
    local p = R.pack_padded_sequence(x, { 2, 4, 1 }, { batch_first = true, enforce_sorted = false })
    assert.are.same({ 21, 11, 31, 22, 12, 23, 24 }, p.data:tolist())
    assert.are.same({ 3, 2, 1, 1 }, p.batch_sizes:tolist())
    assert.are.same({ 2, 1, 3 }, p.sorted_indices:tolist())
    assert.are.same({ 2, 1, 3 }, p.unsorted_indices:tolist())
    assert.are.equal(p.data, p[1]) -- the namedtuple's positions
    -- sorted input: no permutation
    local s = R.pack_padded_sequence(x:t(), wick.tensor({ 4, 2, 1 }))
    assert.is_nil(s.sorted_indices)
    assert.are.same({ 3, 2, 1, 1 }, s.batch_sizes:tolist())
    -- back again, in the caller's order, padded to the longest with padding_value
    local back, lengths = R.pad_packed_sequence(p, { batch_first = true, padding_value = -1 })
    assert.are.same({ { 11, 12, -1, -1 }, { 21, 22, 23, 24 }, { 31, -1, -1, -1 } }, back:tolist())
    assert.are.same({ 2, 4, 1 }, lengths:tolist())
    assert.are.same({ 6, 3 }, (R.pad_packed_sequence(p, { total_length = 6 })):size())
  end)

  it("a PackedSequence built from data and batch_sizes gives the same padded batch", function()
    local x = wick.randn(5, 3, 2)
    local p = R.pack_padded_sequence(x, { 3, 5, 2 }, false, false)
    local q = R.PackedSequence(p.data, p.batch_sizes, p.sorted_indices, p.unsorted_indices)
    assert.is_true(same((R.pad_packed_sequence(p)), (R.pad_packed_sequence(q))))
    -- a layer applied to packed.data, packed again (the dropout-on-data idiom)
    local r = R.PackedSequence(p.data * 2, p.batch_sizes, p.sorted_indices, p.unsorted_indices)
    assert.is_true(near((R.pad_packed_sequence(r)), (R.pad_packed_sequence(p)) * 2))
    local seqs = R.unpack_sequence(R.pack_sequence({ wick.ones(2), wick.ones(4) * 2 }, false))
    assert.are.same({ { 1, 1 }, { 2, 2, 2, 2 } }, { seqs[1]:tolist(), seqs[2]:tolist() })
  end)

  for _, kind in ipairs({ "LSTM", "GRU", "RNN" }) do
    it(kind .. " on a PackedSequence equals one run per sequence, in the caller's batch order", function()
      wick.manual_seed(5)
      local m = nn[kind](3, 4, { num_layers = 2, bidirectional = true, batch_first = true }):double()
      local lengths = { 2, 5, 3 }
      local x = wick.randn(3, 5, 3, { dtype = "float64" })
      local out, hidden = m(R.pack_padded_sequence(x, lengths, true, false))
      assert.is_true(R._is_packed(out))
      local padded, lens = R.pad_packed_sequence(out, true)
      assert.are.same(lengths, lens:tolist())
      local h = kind == "LSTM" and hidden[1] or hidden
      for b, l in ipairs(lengths) do
        local o1, h1 = m(x[b]:narrow(1, 1, l):unsqueeze(1))
        assert.is_true(near(padded[b]:narrow(1, 1, l), o1[1]), "output of sequence " .. b)
        if l < 5 then assert.are.equal(0, padded[b]:narrow(1, l + 1, 5 - l):abs():sum():item()) end
        h1 = kind == "LSTM" and h1[1] or h1
        assert.is_true(near(h:select(2, b), h1:select(2, 1)), "final state of sequence " .. b)
      end
    end)
  end

  it("refuses what PyTorch refuses, with its words", function()
    local x = wick.zeros(4, 2, 3)
    support.assert_error_has(function() R.pack_padded_sequence(x, { 2, 4 }) end,
      "`lengths` array must be sorted in decreasing order when `enforce_sorted` is True")
    support.assert_error_has(function() R.pack_padded_sequence(x, { 4, 0 }) end, "greater than 0")
    support.assert_error_has(function() R.pack_padded_sequence(x, { 4 }) end, "Expected `len(lengths)` to be equal to batch_size")
    support.assert_error_has(function() R.pack_padded_sequence(x, { 5, 1 }) end, "longer than the padded sequences")
    support.assert_error_has(function() R.pack_padded_sequence(x, { 4, 2 }, { sorted = true }) end, "unknown option 'sorted'")
    support.assert_error_has(function() R.pad_packed_sequence(x) end, "expected a PackedSequence")
    support.assert_error_has(function() R.pad_packed_sequence(R.pack_padded_sequence(x, { 4, 2 }), { total_length = 3 }) end,
      "Expected total_length to be at least the length of the longest sequence")
    support.assert_error_has(function() R.pad_sequence({ wick.zeros(2, 3), wick.zeros(2, 4) }) end, "must match")
    support.assert_error_has(function() R.pad_sequence({}) end, "empty list")
    support.assert_error_has(function() R.PackedSequence(wick.zeros(3), wick.tensor({ 1, 2 })) end, "non-increasing")
    local m = nn.LSTM(3, 4)
    support.assert_error_has(function() m(R.pack_padded_sequence(x, { 4, 2 }), { lengths = { 4, 2 } }) end,
      "carries its lengths")
  end)
end)
