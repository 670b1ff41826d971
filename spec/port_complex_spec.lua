-- Two public programs that need complex tensors, ported line by line, against
-- PyTorch 2.15's numbers for the same deterministic inputs (the Python runs
-- are in the comments): Meta's llama rotary embedding in its complex form
-- (model.py: precompute_freqs_cis, reshape_for_broadcast, apply_rotary_emb)
-- and the Fourier neural operator's SpectralConv2d (neuraloperator's
-- fourier_2d.py: rfft2, complex einsum into the kept modes, irfft2).
local wick = require("wick")

local function det(shape, s)
  local n = 1
  for _, d in ipairs(shape) do n = n * d end
  return (wick.arange(n):reshape(shape) * s):sin()
end
local function near(got, want, tol) assert(math.abs(got - want) <= tol * (1 + math.abs(want)), got .. " vs " .. want) end

describe("ported programs with complex tensors", function()
  it("llama's rotary embedding (view_as_complex, polar, complex product, view_as_real), values and gradients", function()
    local function precompute_freqs_cis(dim, end_, theta)
      theta = theta or 10000.0
      local freqs = 1.0 / (theta ^ (wick.arange(0, dim, 2)[{ { 1, math.floor(dim / 2) } }]:float() / dim))
      local t = wick.arange(end_)
      freqs = wick.outer(t, freqs):float()
      return wick.polar(wick.ones_like(freqs), freqs) -- complex64
    end
    local function reshape_for_broadcast(freqs_cis, x)
      local ndim = x:dim()
      local shape = {}
      for i = 1, ndim do shape[i] = (i == 2 or i == ndim) and x.shape[i] or 1 end
      return freqs_cis:view(shape)
    end
    local function apply_rotary_emb(xq, xk, freqs_cis)
      local s = xq.shape
      local xq_ = wick.view_as_complex(xq:float():reshape(s[1], s[2], s[3], -1, 2))
      local xk_ = wick.view_as_complex(xk:float():reshape(s[1], s[2], s[3], -1, 2))
      freqs_cis = reshape_for_broadcast(freqs_cis, xq_)
      local xq_out = wick.view_as_real(xq_ * freqs_cis):flatten(4)
      local xk_out = wick.view_as_real(xk_ * freqs_cis):flatten(4)
      return xq_out:type_as(xq), xk_out:type_as(xk)
    end
    local B, T, H, D = 2, 5, 3, 8
    local xq = det({ B, T, H, D }, 0.37):requires_grad_()
    local xk = (wick.arange(B * T * H * D):reshape(B, T, H, D) * 0.23):cos():requires_grad_()
    local fc = precompute_freqs_cis(D, T * 2)[{ { 1, T } }]
    assert.are.equal("complex64", fc.dtype)
    local q, k = apply_rotary_emb(xq, xk, fc)
    local w = wick.arange(B * T * H * D):reshape(B, T, H, D) * 0.01
    local loss = (q * w):sum() + (k * k):sum()
    loss:backward()
    -- PyTorch: 2.487557 148.217987 118.318649 / 276.104584 -7.664886
    near(q:sum():item(), 2.487557, 1e-5)
    near(k:abs():sum():item(), 148.217987, 1e-5)
    near(loss:item(), 118.318649, 1e-5)
    near(xq.grad:abs():sum():item(), 276.104584, 1e-5)
    near(xk.grad:sum():item(), -7.664886, 1e-4)
    local row = xq.grad[2][3][2]:totable()
    local want = { 0.8770380020, -2.3369433880, 2.1001365185, 1.4006878138, 1.8358376026, 1.7736403942, 1.8236562014,
      1.8263561726 }
    for i = 1, 8 do near(row[i], want[i], 1e-5) end
  end)

  it("the Fourier neural operator's spectral convolution (rfft2, einsum of complex weights, irfft2)", function()
    local B, Ci, Co, H, W, m1, m2 = 2, 3, 4, 8, 10, 3, 2
    local w1 = wick.complex(det({ Ci, Co, m1, m2 }, 0.3), det({ Ci, Co, m1, m2 }, 0.7)):requires_grad_()
    local w2 = wick.complex(det({ Ci, Co, m1, m2 }, 0.5), det({ Ci, Co, m1, m2 }, 0.9)):requires_grad_()
    local x = det({ B, Ci, H, W }, 0.13):requires_grad_()
    local function compl_mul2d(input, weights) return wick.einsum("bixy,ioxy->boxy", input, weights) end
    local x_ft = wick.fft.rfft2(x)
    local out_ft = wick.zeros(B, Co, H, math.floor(W / 2) + 1, { dtype = wick.cfloat })
    out_ft[{ {}, {}, { 1, m1 }, { 1, m2 } }] = compl_mul2d(x_ft[{ {}, {}, { 1, m1 }, { 1, m2 } }], w1)
    out_ft[{ {}, {}, { -m1, -1 }, { 1, m2 } }] = compl_mul2d(x_ft[{ {}, {}, { -m1, -1 }, { 1, m2 } }], w2)
    local y = wick.fft.irfft2(out_ft, { s = { H, W } })
    local loss = (y * det({ B, Co, H, W }, 0.21)):sum()
    loss:backward()
    -- PyTorch: 474.160645 -24.187361 / 268.544373 0.162775 107.463676
    near(y:abs():sum():item(), 474.160645, 1e-5)
    near(loss:item(), -24.187361, 1e-5)
    near(x.grad:abs():sum():item(), 268.544373, 1e-5)
    near(w1.grad.real:sum():item(), 0.162775, 1e-4)
    near(w2.grad.imag:abs():sum():item(), 107.463676, 1e-5)
  end)
end)
