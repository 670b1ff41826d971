-- wick.distributions' VonMises, ContinuousBernoulli and GeneralizedPareto, and ContinuousBernoulli's
-- KL divergences, against PyTorch (torch 2.15, float64): every number in `cases` was printed by PyTorch
-- from the same expression (log_prob, cdf, icdf, entropy, mean, variance, mode, kl_divergence).
-- VonMises' rejection sampler replays PyTorch's uniforms (wick.rand replaced); other draws come from
-- wick's own generator: checked by shape, support and moments (a fixed seed).
local wick = require("wick")
local support = require("spec.support")
local assert_error_has = support.assert_error_has
local D = wick.distributions
local F64 = { dtype = "float64" }
local INF, NAN = math.huge, 0 / 0
local function T(v) return wick.tensor(v, F64) end
local N = 20000
local function all_true(mask) return mask:all() == true end
-- got (a tensor or Lua array) against want elementwise: relative tol (absolute below 1)
local function near(got, want, tol, where)
  if type(got) ~= "table" or wick.is_tensor(got) then got = got:reshape(-1):totable() end
  assert.are.equal(#want, #got, where)
  for i, w in ipairs(want) do
    local err = math.abs(got[i] - w) / math.max(math.abs(w), 1)
    assert.is_true(err <= tol, ("%s [%d]: %.17g, want %.17g"):format(where or "", i, got[i], w))
  end
end
-- wick.rand replaced by these arrays in turn (each shaped as asked) while f runs
local function replaying(arrays, f)
  local real, k = wick.rand, 0
  wick.rand = function(shape, opts)
    k = k + 1
    assert(arrays[k], "more draws than PyTorch made")
    return wick.tensor(arrays[k], { dtype = "float64" }):reshape(shape):to(opts and opts.dtype or "float64")
  end
  local ok, out = pcall(f)
  wick.rand = real
  if not ok then error(out, 0) end
  return out, k
end

-- { label, expression, PyTorch's values (flattened), PyTorch's shape }
local cases = {
  { 'VonMises', function() return D.VonMises(T({0.5, -1, 3, 0}), T({0.1, 2, 10, 3.75})):log_prob(T({0.3, 2, -3, 7})) end, { -1.7423688463883764, -4.641855603269009, -0.17914629592976272, -1.2210978391731158 }, { 4 } },
  { 'VonMises', function() return D.VonMises(T({0.5, -1, 3, 0}), T({0.1, 2, 10, 3.75})):log_prob(T({{0}, {-10}})) end, { -1.7526172479834632, -1.5812659983318382, -19.680774128437875, -0.2982312929605082, -1.8879291969720997, -4.484131133837472, -0.7063813479314609, -7.194749526997205 }, { 2, 4 } },
  { 'VonMises', function() return D.VonMises(T({0.5, -1, 3, 0}), T({0.1, 2, 10, 3.75})).mean end, { 0.5, -1.0, 3.0, 0.0 }, { 4 } },
  { 'VonMises', function() return D.VonMises(T({0.5, -1, 3, 0}), T({0.1, 2, 10, 3.75})).mode end, { 0.5, -1.0, 3.0, 0.0 }, { 4 } },
  { 'VonMises', function() return D.VonMises(T({0.5, -1, 3, 0}), T({0.1, 2, 10, 3.75})).variance end, { 0.9500623959603771, 0.3022253424022666, 0.051400180300091414, 0.14682956159041904 }, { 4 } },
  { 'VonMises', function() return D.VonMises(T({0.5, -1, 3, 0}), T({0.1, 2, 10, 3.75})).stddev end, { 0.9747114424076374, 0.5497502545722618, 0.22671607860954948, 0.38318345683291055 }, { 4 } },
  { 'VonMises', function() return D.VonMises(1, T({1e-6, 0.5, 3.7, 3.8, 50, 700})).variance end, { 0.9999995, 0.7575003832967004, 0.14909358160646025, 0.14463376142429363, 0.010050398295787244, 0.0007142284214104455 }, { 6 } },
  { 'VonMises', function() return D.VonMises(1, T({1e-6, 0.5, 3.7, 3.8, 50, 700})):log_prob(T(1.2)) end, { -1.8378760863430175, -1.4093934715241028, -0.37938273867034145, -0.36669197403846043, 0.037876620181620524, -11.596972429559969 }, { 6 } },
  { 'VonMises', function() return D.VonMises(T({0.2}), T({4})):expand({2, 3}):log_prob(T({{0, 1, 2}, {3, 4, 5}})) end, { -0.3425835698541908, -1.4760230438304958, -5.1716582599915055, -8.031739243893789, -7.426720728876824, -3.9128539474613717 }, { 2, 3 } },
  { 'VonMises', function() return D.VonMises(T({0.5, 1}), T({1e-6, 2}))._proposal_r end, { 1000000.000001, 1.2807764064044151 }, { 2 } },
  { 'ContinuousBernoulli', function() return D.ContinuousBernoulli(T({0.01, 0.2, 0.4995, 0.5, 0.7, 0.999})):log_prob(T({0, 0.3, 0.5, 1, 0.25, 0.9})) end, { 1.5351472096593963, 0.19842802409409477, -1.6666677216115033e-07, 0.0, -0.24156058834867622, 1.2428259106403652 }, { 6 } },
  { 'ContinuousBernoulli', function() return D.ContinuousBernoulli(T({0.01, 0.2, 0.4995, 0.5, 0.7, 0.999})):cdf(T({0, 0.3, 0.5, 1, 0.25, 0.9})) end, { 0.0, 0.45366139281807033, 0.5, 1.0, 0.17694818776683555, 0.5007376177908902 }, { 6 } },
  { 'ContinuousBernoulli', function() return D.ContinuousBernoulli(T({0.01, 0.2, 0.4995, 0.5, 0.7, 0.999})):icdf(T({0, 0.3, 0.5, 1, 0.25, 0.9})) end, { -0.0, 0.18386589225024355, 0.5, 1.0, 0.33952885508328107, 0.9847613962154133 }, { 6 } },
  { 'ContinuousBernoulli', function() return D.ContinuousBernoulli(T({0.01, 0.2, 0.4995, 0.5, 0.7, 0.999})).mean end, { 0.20741809855285617, 0.3880141871111483, 0.4998333332888889, 0.5, 0.5697774988561712, 0.8562162063289981 }, { 6 } },
  { 'ContinuousBernoulli', function() return D.ContinuousBernoulli(T({0.01, 0.2, 0.4995, 0.5, 0.7, 0.999})).variance end, { 0.03705120839407535, 0.0758978008069574, 0.08333331666667512, 0.08333333333333333, 0.0804251522061945, 0.01995991918950142 }, { 6 } },
  { 'ContinuousBernoulli', function() return D.ContinuousBernoulli(T({0.01, 0.2, 0.4995, 0.5, 0.7, 0.999})).stddev end, { 0.1924869044742404, 0.27549555496769346, 0.28867510572731264, 0.28867513459481287, 0.28359328660282934, 0.1412795781049102 }, { 6 } },
  { 'ContinuousBernoulli', function() return D.ContinuousBernoulli(T({0.01, 0.2, 0.4995, 0.5, 0.7, 0.999})):entropy() end, { -0.582036187721994, -0.07641445280335896, -1.666667611699424e-07, 0.0, -0.029386202232128955, -0.9404219844758108 }, { 6 } },
  { 'ContinuousBernoulli', function() return D.ContinuousBernoulli(T({0.01, 0.2, 0.4995, 0.5, 0.7, 0.999})).logits end, { -4.59511985013459, -1.3862943611198906, -0.0020000006666670567, 0.0, 0.8472978603872034, 6.906754778648552 }, { 6 } },
  { 'ContinuousBernoulli', function() return D.ContinuousBernoulli(T({0.01, 0.2, 0.4995, 0.5, 0.7, 0.999})):log_prob(T({{0.1}, {0.8}})) end, { 1.075635224645937, 0.4756868963180729, 0.0007998335998946615, 0.0, -0.3686552674067569, -4.282577912278477, -2.140948670448276, -0.49471915646585063, -0.0006001668667723337, 0.0, 0.2244532348642857, 0.5521504327755102 }, { 2, 6 } },
  { 'ContinuousBernoulli', function() return D.ContinuousBernoulli(T({0, 1}), false):log_prob(T({0.5, 0.5})) end, { -14.437095896558812, -14.437095896558812 }, { 2 } },
  { 'ContinuousBernoulli', function() return D.ContinuousBernoulli(T({0, 1})).mean end, { 0.027744135401710616, 0.9722558645982894 }, { 2 } },
  { 'ContinuousBernoulli', function() return D.ContinuousBernoulli(T(0.3)):log_prob(0.6) end, { -0.11446590929059575 }, {  } },
  { 'ContinuousBernoulli', function() return D.ContinuousBernoulli({ logits = T({-3, 0, 0.001, 2.5, 40}) }):log_prob(T({0.2, 0.4, 0.6, 0.8, 1})) end, { 0.5496814696108117, 0.0, 9.995833333364956e-05, 0.5019412156161936, 3.5847307979997636 }, { 5 } },
  { 'ContinuousBernoulli', function() return D.ContinuousBernoulli({ logits = T({-3, 0, 0.001, 2.5, 40}) }).probs end, { 0.04742587317756678, 0.5, 0.5002499999791666, 0.9241418199787566, 0.9999999999999998 }, { 5 } },
  { 'ContinuousBernoulli', function() return D.ContinuousBernoulli({ logits = T({-3, 0, 0.001, 2.5, 40}) }).mean end, { 0.28093763684207734, 0.5, 0.5000833333319444, 0.689425489833852, 0.9722558645982894 }, { 5 } },
  { 'ContinuousBernoulli', function() return D.ContinuousBernoulli({ logits = T({-3, 0, 0.001, 2.5, 40}) }).variance end, { 0.055970105609051336, 0.08333333333333333, 0.08333332916666789, 0.0625775919341236, 0.0007697370491882425 }, { 5 } },
  { 'ContinuousBernoulli', function() return D.ContinuousBernoulli({ logits = T({-3, 0, 0.001, 2.5, 40}) }):entropy() end, { -0.3068685590845792, 0.0, -4.1666665562267724e-08, -0.22550494020082335, -2.584730797999768 }, { 5 } },
  { 'ContinuousBernoulli', function() return D.ContinuousBernoulli({ logits = T({-3, 0, 0.001, 2.5, 40}) }):cdf(T({0.2, 0.4, 0.6, 0.8, 1})) end, { 0.47482869248157733, 0.4, 0.6, 0.571344471222833, 1.0 }, { 5 } },
  { 'ContinuousBernoulli', function() return D.ContinuousBernoulli(nil, T({-1, 1}), {0.2, 0.8}):icdf(T({0.25, 0.75})) end, { 0.25, 0.75 }, { 2 } },
  { 'ContinuousBernoulli', function() return D.ContinuousBernoulli(T({0.1, 0.35, 0.5, 0.65, 0.9}), { lims = {0.3, 0.7} }):log_prob(T({0.5, 0.5, 0.5, 0.2, 0.2})) end, { -0.19363424483508185, -0.015985339735620663, 0.0, -0.20169710225748783, -0.8528016180359481 }, { 5 } },
  { 'ContinuousBernoulli', function() return D.ContinuousBernoulli(T({0.1, 0.35, 0.5, 0.65, 0.9}), { lims = {0.3, 0.7} }).mean end, { 0.33011961331341877, 0.4488, 0.5, 0.5512, 0.6698803866865813 }, { 5 } },
  { 'ContinuousBernoulli', function() return D.ContinuousBernoulli(T({0.1, 0.35, 0.5, 0.65, 0.9}), { lims = {0.3, 0.7} }).variance end, { 0.06650886242255583, 0.08190190476190476, 0.08333333333333333, 0.08190190476190476, 0.0665088624225558 }, { 5 } },
  { 'ContinuousBernoulli', function() return D.ContinuousBernoulli(T({0.1, 0.35, 0.5, 0.65, 0.9}), { lims = {0.3, 0.7} }):cdf(T({0.5, 0.5, 0.5, 0.2, 0.2})) end, { 0.7499999999999999, 0.5, 0.5, 0.2, 0.06898069673941992 }, { 5 } },
  { 'ContinuousBernoulli', function() return D.ContinuousBernoulli(T({0.1, 0.35, 0.5, 0.65, 0.9}), { lims = {0.3, 0.7} }):icdf(T({0.5, 0.5, 0.5, 0.2, 0.2})) end, { 0.2675132396410364, 0.5, 0.5, 0.2, 0.43487199937743287 }, { 5 } },
  { 'ContinuousBernoulli', function() return D.ContinuousBernoulli(T({0.1, 0.35, 0.5, 0.65, 0.9}), { lims = {0.3, 0.7} }):entropy() end, { -0.17963111600005513, -0.015709467734777938, 0.0, -0.015709467734777993, -0.17963111600005544 }, { 5 } },
  { 'ContinuousBernoulli', function() return D.ContinuousBernoulli(T({0.3})):expand({2, 2}):entropy() end, { -0.02938620223212912, -0.02938620223212912, -0.02938620223212912, -0.02938620223212912 }, { 2, 2 } },
  { 'KL(CB, CB)', function() return D.kl_divergence(D.ContinuousBernoulli(T({0.2, 0.4995, 0.9})), D.ContinuousBernoulli(T({0.7, 0.1, 0.5002}))) end, { 0.20103591570967994, 0.1932682073079659, 0.17949523835012693 }, { 3 } },
  { 'KL(CB, CB)', function() return D.kl_divergence(D.ContinuousBernoulli(T({0.2, 0.4995, 0.9})), D.ContinuousBernoulli({ logits = T({0.5, -2, 1}) })) end, { 0.1428024102405414, 0.16110619481573463, 0.051075583926392 }, { 3 } },
  { 'KL(Beta, CB)', function() return D.kl_divergence(D.Beta(T({0.5, 2, 5}), T({1.5, 3, 0.7})), D.ContinuousBernoulli(T({0.2, 0.4995, 0.9}))) end, { 0.28067455256045526, 0.23470681638810587, 0.49467873318146793 }, { 3 } },
  { 'KL(Uniform, CB)', function() return D.kl_divergence(D.Uniform(T({0.1, 0, 0.3}), T({0.9, 0.5, 1})), D.ContinuousBernoulli(T({0.2, 0.4995, 0.9}))) end, { 0.3019743994440931, INF, INF }, { 3 } },
  { 'KL(CB, Exponential)', function() return D.kl_divergence(D.ContinuousBernoulli(T({0.2, 0.4995, 0.9})), D.Exponential(T({0.5, 2, 7}))) end, { 0.9635687269188784, 0.3065196526845937, 2.9228836737508113 }, { 3 } },
  { 'KL(CB, Normal)', function() return D.kl_divergence(D.ContinuousBernoulli(T({0.2, 0.4995, 0.9})), D.Normal(T({0.5, -1, 3}), T({0.2, 1, 4}))) end, { 0.49139786226560966, 2.085355372027001, 2.6566129564111947 }, { 3 } },
  { 'KL(CB, Uniform)', function() return D.kl_divergence(D.ContinuousBernoulli(T({0.2, 0.4995, 0.9})), D.Uniform(T({-1, 0, -0.5}), T({2, 1, 0.9}))) end, { 1.1750267414714688, INF, INF }, { 3 } },
  { 'KL(CB, Pareto)', function() return D.kl_divergence(D.ContinuousBernoulli(T({0.2, 0.4995, 0.9})), D.Pareto(T({1, 2, 3}), 2)) end, { INF, INF, INF }, { 3 } },
  { 'KL(Exponential, CB)', function() return D.kl_divergence(D.Exponential(T({1, 2, 3})), D.ContinuousBernoulli(T({0.2, 0.4995, 0.9}))) end, { INF, INF, INF }, { 3 } },
  { 'KL(Gamma, CB)', function() return D.kl_divergence(D.Gamma(T({1, 2, 3}), 1), D.ContinuousBernoulli(T({0.2, 0.4995, 0.9}))) end, { INF, INF, INF }, { 3 } },
  { 'KL(Gumbel, CB)', function() return D.kl_divergence(D.Gumbel(T({1, 2, 3}), 1), D.ContinuousBernoulli(T({0.2, 0.4995, 0.9}))) end, { INF, INF, INF }, { 3 } },
  { 'KL(Laplace, CB)', function() return D.kl_divergence(D.Laplace(T({1, 2, 3}), 1), D.ContinuousBernoulli(T({0.2, 0.4995, 0.9}))) end, { INF, INF, INF }, { 3 } },
  { 'KL(Normal, CB)', function() return D.kl_divergence(D.Normal(T({1, 2, 3}), 1), D.ContinuousBernoulli(T({0.2, 0.4995, 0.9}))) end, { INF, INF, INF }, { 3 } },
  { 'KL(Pareto, CB)', function() return D.kl_divergence(D.Pareto(T({1, 2, 3}), 1), D.ContinuousBernoulli(T({0.2, 0.4995, 0.9}))) end, { INF, INF, INF }, { 3 } },
  { 'GeneralizedPareto', function() return D.GeneralizedPareto(T({0, 1, -2, 0.5, 0, 3, 0}), T({1, 2, 0.5, 1.5, 1, 0.1, 2}), T({0.5, -0.5, 0, 1e-9, -1, 2, 0.3})):log_prob(T({0.5, 2, -1, 4, 0.7, 3.5, 10})) end, { -0.6694306539426294, -0.9808292530117262, -1.3068528194400546, -2.7387984414414976, -0.0, -1.2942578162035105, -4.663740352014618 }, { 7 } },
  { 'GeneralizedPareto', function() return D.GeneralizedPareto(T({0, 1, -2, 0.5, 0, 3, 0}), T({1, 2, 0.5, 1.5, 1, 0.1, 2}), T({0.5, -0.5, 0, 1e-9, -1, 2, 0.3})):cdf(T({0.5, 2, -1, 4, 0.7, 3.5, 10})) end, { 0.36, 0.4375, 0.8646647167633873, 0.9030280321355949, 0.7, 0.6984886554222364, 0.9528443968174031 }, { 7 } },
  { 'GeneralizedPareto', function() return D.GeneralizedPareto(T({0, 1, -2, 0.5, 0, 3, 0}), T({1, 2, 0.5, 1.5, 1, 0.1, 2}), T({0.5, -0.5, 0, 1e-9, -1, 2, 0.3})):log_cdf(T({0.5, 2, -1, 4, 0.7, 3.5, 10})) end, { -1.0216512475319814, -0.8266785731844679, -0.14541345786885906, -0.10200168270745684, -0.35667494393873245, -0.35883634175955176, -0.048303665870649264 }, { 7 } },
  { 'GeneralizedPareto', function() return D.GeneralizedPareto(T({0, 1, -2, 0.5, 0, 3, 0}), T({1, 2, 0.5, 1.5, 1, 0.1, 2}), T({0.5, -0.5, 0, 1e-9, -1, 2, 0.3})):log_survival_function(T({0.5, 2, -1, 4, 0.7, 3.5, 10})) end, { -0.44628710262841953, -0.5753641449035618, -2.0, -2.3333333333333335, -1.203972804325936, -1.1989476363991853, -3.054302439580517 }, { 7 } },
  { 'GeneralizedPareto', function() return D.GeneralizedPareto(T({0, 1, -2, 0.5, 0, 3, 0}), T({1, 2, 0.5, 1.5, 1, 0.1, 2}), T({0.5, -0.5, 0, 1e-9, -1, 2, 0.3})):icdf(T({0.3, 0.9, 0.5, 0.01, 0.25, 0.999, 0})) end, { 0.39045721866878724, 3.7350889359326485, -1.6534264097200273, 0.5150755037802521, 0.24999999999999997, 50002.949999999895, 0.0 }, { 7 } },
  { 'GeneralizedPareto', function() return D.GeneralizedPareto(T({0, 1, -2, 0.5, 0, 3, 0}), T({1, 2, 0.5, 1.5, 1, 0.1, 2}), T({0.5, -0.5, 0, 1e-9, -1, 2, 0.3})).mean end, { 2.0, 2.333333333333333, -1.5, 2.0000000015, 0.5, NAN, 2.857142857142857 }, { 7 } },
  { 'GeneralizedPareto', function() return D.GeneralizedPareto(T({0, 1, -2, 0.5, 0, 3, 0}), T({1, 2, 0.5, 1.5, 1, 0.1, 2}), T({0.5, -0.5, 0, 1e-9, -1, 2, 0.3})).variance end, { NAN, 0.8888888888888888, 0.25, 2.250000009, 0.08333333333333333, NAN, 20.408163265306126 }, { 7 } },
  { 'GeneralizedPareto', function() return D.GeneralizedPareto(T({0, 1, -2, 0.5, 0, 3, 0}), T({1, 2, 0.5, 1.5, 1, 0.1, 2}), T({0.5, -0.5, 0, 1e-9, -1, 2, 0.3})).stddev end, { NAN, 0.9428090415820634, 0.5, 1.500000003, 0.28867513459481287, NAN, 4.5175395145262565 }, { 7 } },
  { 'GeneralizedPareto', function() return D.GeneralizedPareto(T({0, 1, -2, 0.5, 0, 3, 0}), T({1, 2, 0.5, 1.5, 1, 0.1, 2}), T({0.5, -0.5, 0, 1e-9, -1, 2, 0.3})).mode end, { 0.0, 1.0, -2.0, 0.5, 0.0, 3.0, 0.0 }, { 7 } },
  { 'GeneralizedPareto', function() return D.GeneralizedPareto(T({0, 1, -2, 0.5, 0, 3, 0}), T({1, 2, 0.5, 1.5, 1, 0.1, 2}), T({0.5, -0.5, 0, 1e-9, -1, 2, 0.3})):entropy() end, { 1.5, 1.1931471805599454, 0.3068528194400547, 1.4054651091081645, 0.0, 0.6974149070059545, 1.9931471805599452 }, { 7 } },
  { 'GeneralizedPareto', function() return D.GeneralizedPareto(T(0), 1, -0.5):log_prob(T({0, 1, 2})) end, { -0.0, -0.6931471805599453, -INF }, { 3 } },
  { 'GeneralizedPareto', function() return D.GeneralizedPareto(0, T(1), -1):log_prob(T({0.5, 1, 0})) end, { -0.0, -0.0, -0.0 }, { 3 } },
  { 'GeneralizedPareto', function() return D.GeneralizedPareto(0, 1, T(-0.5)):cdf(T({0, 1, 2})) end, { 0.0, 0.75, 1.0 }, { 3 } },
  { 'GeneralizedPareto', function() return D.GeneralizedPareto(T(1), 2, 0.25):entropy() end, { 1.9431471805599454 }, {  } },
  { 'GeneralizedPareto', function() return D.GeneralizedPareto(T({0.5}), 2, T({0.1, -0.2})):expand({2, 2}):log_prob(T({{1, 2}, {3, 4}})) end, { -0.9647659190540319, -1.343222898551045, -1.9887605727801634, -2.4162788449297623 }, { 2, 2 } },
  { 'GeneralizedPareto', function() return D.GeneralizedPareto(T({0.5}), 2, T({0.1, -0.2})):expand({3, 2}):entropy() end, { 1.7931471805599453, 1.4931471805599452, 1.7931471805599453, 1.4931471805599452, 1.7931471805599453, 1.4931471805599452 }, { 3, 2 } },
  { 'GeneralizedPareto', function() return D.GeneralizedPareto(T({0, 1}), T({1, 2}), T({0.5, -0.5})).support.check(T({{-0.1, 1}, {100, 5}, {0.5, 5.1}})):double() end, { 0.0, 1.0, 1.0, 1.0, 1.0, 0.0 }, { 3, 2 } },
}

describe("wick.distributions: PyTorch's values (float64)", function()
  it("log_prob, cdf, icdf, entropy, moments and KL of VonMises, ContinuousBernoulli, GeneralizedPareto", function()
    support.assert_value_cases(cases)
  end)
end)

describe("wick.distributions: VonMises", function()
  local draws = {
    { 0.03410819565052048, 0.28674022672130695, 0.7729149443285843, 0.17492702928129467, 0.7553698716458989, 0.608250626920705, 0.198727150264138, 0.4334155311051854, 0.40484194448065547, 0.7785495256536756, 0.18648345249659892, 0.5944401994573114, 0.44701777247286434, 0.3419577378774037, 0.9700424636058431, 0.08703752198288572, 0.1148971394664643, 0.533166872810493 },
    { 0.9490077029994213, 0.1272499812946074, 0.6593767673304687, 0.5464594777202473, 0.04922403093343142, 0.2651331208266091, 0.44117820628416327, 0.08463278654610029, 0.43251288298859203, 0.5697473969769985, 0.5651348678693892, 0.7137212851593504, 0.8386364663683555, 0.04177395119961602, 0.004242329086875718, 0.09778709363506133, 0.13180514559822554, 0.8604394978135508 },
  }
  local want = { -2.889754838419689, -2.3997672172004734, 2.6271545332020025, -0.780742097657876, -2.1546416999343836, 3.0988232026640397 }
  local draws32 = {
    { 0.47710938483307586, 0.7316547263599992, 0.057557037172768055, 0.9431570096185675, 0.9486325252324131, 0.55129725526055, 0.410083400967563, 0.7595666401005933, 0.10787577780653301 },
    { 0.45305282257227875, 0.17623234041173452, 0.8590271817953548, 0.4101459319574077, 0.004579355302780641, 0.5489155730086305, 0.33991518590343006, 0.4035218298556057, 0.6979857761734882 },
  }
  local want32 = { 0.41234099864959717, 0.8012814521789551, 0.9364044666290283 }

  it("sample replays PyTorch's rejection sampler draw for draw (float64 and float32)", function()
    local d = D.VonMises(T({ 0.5, -2, 3 }), T({ 0.5, 1e-6, 20 }))
    local s, rounds = replaying(draws, function() return d:sample({ 2 }) end)
    assert.are.equal(#draws, rounds)
    assert.are.same({ 2, 3 }, s:size())
    assert.are.equal("float64", s.dtype)
    near(s, want, 1e-14, "float64")
    local d32 = D.VonMises(wick.tensor({ 1 }, { dtype = "float32" }), wick.tensor({ 2 }, { dtype = "float32" }))
    local s32 = replaying(draws32, function() return d32:sample(3) end)
    assert.are.equal("float32", s32.dtype)
    assert.are.same({ 3, 1 }, s32:size())
    near(s32, want32, 1e-7, "float32")
  end)

  it("sample: shape, range [-pi, pi], circular mean and variance; no rsample", function()
    wick.manual_seed(5)
    local d = D.VonMises(T({ 0.5, -3, 2 }), T({ 4, 0.3, 30 }))
    assert.is_false(d.has_rsample)
    assert.are.same({ 3 }, d.batch_shape)
    assert.are.same({}, d.event_shape)
    local s = d:sample({ N })
    assert.are.same({ N, 3 }, s:size())
    assert.is_true(all_true(s:ge(-math.pi)) and all_true(s:le(math.pi)))
    -- E[cos(x - loc)] = 1 - circular variance
    local c = (s - d.loc):cos():mean(1):totable()
    local v = d.variance:totable()
    for i = 1, 3 do assert.is_true(math.abs(c[i] - (1 - v[i])) < 0.02, ("E cos %d: %g, want %g"):format(i, c[i], 1 - v[i])) end
    local sn = (s - d.loc):sin():mean(1):totable()
    for i = 1, 3 do assert.is_true(math.abs(sn[i]) < 0.02, "E sin") end
    assert.are.same({ 4, 2, 3 }, d:sample({ 4, 2 }):size())
    assert.are.same({ 3 }, d:sample():size())
    assert.are.same({ 0, 3 }, d:sample(0):size())
    -- numbers: wick's default dtype; expand; by name
    local n = D.VonMises(0, 1)
    assert.are.equal(wick.get_default_dtype(), n:sample().dtype)
    assert.are.same({}, n.batch_shape)
    local e = D.VonMises(T({ 0.2 }), T({ 4 })):expand({ 2, 3 })
    assert.are.same({ 2, 3 }, e.batch_shape)
    assert.are.same({ 5, 2, 3 }, e:sample(5):size())
    local k = D.VonMises({ loc = T(1), concentration = T(2) })
    assert.are.equal(1, k.mean:item())
    -- a concentration no proposal serves (validate_args = false): NaN, never a hang
    local bad = D.VonMises(T({ 0, 0, 0 }), T({ 0, NAN, 1e200 }), false):sample(2)
    assert.is_true(all_true(bad:ne(bad)))
    local neg = D.VonMises(T({ 0 }), T({ -1 }), { validate_args = false }):sample(50)
    assert.is_true(all_true(neg:abs():le(math.pi)))
  end)

  it("log_prob is differentiable in loc and concentration (PyTorch's gradients)", function()
    local loc, k = T({ 0.5, -1 }):requires_grad_(), T({ 2, 5 }):requires_grad_()
    D.VonMises(loc, k):log_prob(T({ 0.1, 0.2 })):sum():backward()
    near(loc.grad, { -0.778836684617301, 4.660195429836131 }, 1e-13, "loc")
    near(k.grad, { 0.22328635235194683, -0.5310254237229043 }, 1e-13, "concentration")
  end)

  it("errors: PyTorch's messages", function()
    assert_error_has(function() D.VonMises(T(0), T(-1)) end, "VonMises: expected parameter concentration",
      "GreaterThan(lower_bound=0.0)")
    assert_error_has(function() D.VonMises(T(0), T(0)) end, "expected parameter concentration")
    assert_error_has(function() D.VonMises(T(NAN), T(1)) end, "VonMises: expected parameter loc", "Real()")
    assert_error_has(function() D.VonMises(T({ 1, 2 }), T({ 1, 2, 3 })) end, "VonMises")
    assert_error_has(function() D.VonMises("a", 1) end, "VonMises", "loc")
    assert_error_has(function() D.VonMises(0) end, "VonMises", "concentration")
    assert_error_has(function() D.VonMises(0, 1, { bogus = 1 }) end, "VonMises: unknown option 'bogus'")
    local d = D.VonMises(T({ 0, 1 }), T({ 1, 2 }))
    assert_error_has(function() d:log_prob(T(NAN)) end, "VonMises:log_prob", "within the support (Real())")
    assert_error_has(function() d:log_prob(T({ 1, 2, 3 })) end, "VonMises:log_prob", "not broadcastable")
    assert_error_has(function() d:log_prob("x") end, "VonMises:log_prob")
    assert_error_has(function() d:rsample() end, "VonMises:rsample", "no reparameterised draws")
    assert_error_has(function() d:entropy() end, "VonMises:entropy", "NotImplementedError")
    assert_error_has(function() d:cdf(T(0)) end, "VonMises:cdf", "NotImplementedError")
    assert_error_has(function() return d.sample(3) end, "VonMises:sample: expected a VonMises as self")
    assert_error_has(function() d:sample({ -1 }) end, "VonMises:sample", "sample_shape")
    assert_error_has(function() d:sample({ 1e12, 1e12 }) end, "VonMises:sample", "too large")
    assert_error_has(function() d:expand({ 3 }) end, "VonMises:expand")
    -- validate_args = false: no checks
    assert.is_true(D.VonMises(T(0), T(1), false):log_prob(T(NAN)):item() ~= D.VonMises(T(0), T(1), false):log_prob(T(NAN)):item())
  end)
end)

describe("wick.distributions: ContinuousBernoulli", function()
  it("rsample is icdf of wick.rand's uniforms, differentiable in probs and logits (PyTorch's gradients)", function()
    local u = { 0.3, 0.6, 0.9 }
    local p = T({ 0.2, 0.4995, 0.8 }):requires_grad_()
    local d = D.ContinuousBernoulli(p)
    assert.is_true(d.has_rsample)
    local y = replaying({ u }, function() return d:rsample() end)
    near(y, { 0.18386589225024355, 0.6, 0.9437626353707939 }, 1e-14, "rsample")
    y:sum():backward()
    near(p.grad, { 0.3926461306867628, 0.0, 0.13169252875423754 }, 1e-13, "probs grad")
    local l = T({ -1.5, 0, 2 }):requires_grad_()
    y = replaying({ u }, function() return D.ContinuousBernoulli({ logits = l }):rsample() end)
    near(y, { 0.17689863251462667, 0.6, 0.9547823996540754 }, 1e-14, "rsample (logits)")
    y:sum():backward()
    near(l.grad, { 0.059745226561669945, 0.0, 0.015201557907593335 }, 1e-13, "logits grad")
    local q = T({ 0.2, 0.4995, 0.8 }):requires_grad_()
    D.ContinuousBernoulli(q):log_prob(T(u)):sum():backward()
    near(q.grad, { -0.5500886694446768, 0.40066706751151326, 1.8000886694446772 }, 1e-12, "log_prob grad")
    -- sample: the same without gradients
    local s = replaying({ u }, function() return D.ContinuousBernoulli(p):sample() end)
    assert.is_false(s.requires_grad)
  end)

  it("sample: shape, [0, 1], mean and variance; the forms of its arguments", function()
    wick.manual_seed(7)
    local d = D.ContinuousBernoulli(T({ 0.1, 0.5, 0.97 }))
    local s = d:sample({ N })
    assert.are.same({ N, 3 }, s:size())
    assert.is_true(all_true(s:ge(0)) and all_true(s:le(1)))
    local m, sd = d.mean:totable(), d.stddev:totable()
    local sm = s:mean(1):totable()
    for i = 1, 3 do
      assert.is_true(math.abs(sm[i] - m[i]) < 5 * sd[i] / math.sqrt(N), ("mean %d: %g, want %g"):format(i, sm[i], m[i]))
    end
    assert.are.same({ 2, 5, 3 }, d:rsample({ 2, 5 }):size())
    assert.are.same({ 3 }, d.param_shape)
    -- by position (PyTorch's probs, logits, lims), by name, with a trailing validate_args
    assert.are.equal(tostring(D.ContinuousBernoulli(nil, T(0.5))), "ContinuousBernoulli(logits: 0.5)")
    assert.are.equal(tostring(D.ContinuousBernoulli(T(0.25))), "ContinuousBernoulli(probs: 0.25)")
    local a = D.ContinuousBernoulli(T(0.4), nil, { 0.3, 0.7 }, false)
    assert.are.same({ 0.3, 0.7 }, a._lims)
    assert.is_false(a._validate_args)
    local b = D.ContinuousBernoulli({ probs = T(0.4), lims = { 0.3, 0.7 } })
    assert.are.equal(a.mean:item(), b.mean:item())
    -- numbers: wick's default dtype, batch shape {}
    local n = D.ContinuousBernoulli(0.3)
    assert.are.same({}, n.batch_shape)
    assert.are.equal(wick.get_default_dtype(), n:sample().dtype)
    -- probs outside [0, 1] are clamped when validate_args is not given, as PyTorch's
    support.assert_close(D.ContinuousBernoulli(T(1.5)).probs:item(), 1 - wick.finfo("float64").eps, 0)
    -- expand: views with the lims
    local e = D.ContinuousBernoulli(T({ 0.3 }), { lims = { 0.2, 0.8 } }):expand({ 4, 1 })
    assert.are.same({ 4, 1 }, e.batch_shape)
    assert.are.same({ 0.2, 0.8 }, e._lims)
    assert.are.same({ 6, 4, 1 }, e:sample(6):size())
  end)

  it("errors: PyTorch's messages", function()
    assert_error_has(function() D.ContinuousBernoulli() end, "ContinuousBernoulli: Either `probs` or `logits` must be "
      .. "specified, but not both.")
    assert_error_has(function() D.ContinuousBernoulli({ probs = T(0.2), logits = T(0) }) end, "Either `probs` or `logits`")
    assert_error_has(function() D.ContinuousBernoulli(T(0.2), T(0)) end, "Either `probs` or `logits`")
    assert_error_has(function() D.ContinuousBernoulli(T(1.5), true) end,
      "ContinuousBernoulli: The parameter probs has invalid values")
    assert_error_has(function() D.ContinuousBernoulli(T({ 0.5, -0.1 }), { validate_args = false }) end,
      "The parameter probs has invalid values")
    assert_error_has(function() D.ContinuousBernoulli(T(NAN)) end, "ContinuousBernoulli: expected parameter probs",
      "Interval(lower_bound=0.0, upper_bound=1.0)")
    assert_error_has(function() D.ContinuousBernoulli({ logits = T(NAN) }) end, "expected parameter logits", "Real()")
    assert_error_has(function() D.ContinuousBernoulli("x") end, "ContinuousBernoulli", "probs")
    assert_error_has(function() D.ContinuousBernoulli(T(0.2), { lims = 3 }) end, "ContinuousBernoulli", "lims")
    assert_error_has(function() D.ContinuousBernoulli(T(0.2), { lims = { "a", 0.6 } }) end, "ContinuousBernoulli", "lims[1]")
    assert_error_has(function() D.ContinuousBernoulli(T(0.2), { temperature = 1 }) end, "unknown option 'temperature'")
    local d = D.ContinuousBernoulli(T({ 0.3, 0.6 }))
    assert_error_has(function() d:log_prob(T(1.5)) end, "ContinuousBernoulli:log_prob",
      "within the support (Interval(lower_bound=0.0, upper_bound=1.0))")
    assert_error_has(function() d:cdf(T(-0.1)) end, "ContinuousBernoulli:cdf", "within the support")
    assert_error_has(function() d:log_prob(T({ 0.1, 0.2, 0.3 })) end, "ContinuousBernoulli:log_prob", "not broadcastable")
    assert_error_has(function() d:icdf("x") end, "ContinuousBernoulli:icdf")
    assert_error_has(function() d:rsample({ 1e12, 1e12 }) end, "ContinuousBernoulli:rsample", "too large")
    assert_error_has(function() return d.entropy() end, "ContinuousBernoulli:entropy: expected a ContinuousBernoulli")
    assert_error_has(function() D.kl_divergence(d, D.Beta(T(1), T(2))) end,
      "no KL divergence between ContinuousBernoulli and Beta")
    assert_error_has(function() D.kl_divergence(d, D.Gamma(T(1), T(2))) end, "no KL divergence")
    -- icdf is not checked, as PyTorch's (its values outside [0, 1])
    near(d:icdf(T(1.5)), { 2.2966069431192238, 1.380182355385648 }, 1e-14, "icdf(1.5)")
  end)
end)

describe("wick.distributions: GeneralizedPareto", function()
  it("rsample is icdf of wick.rand's uniforms, differentiable in all three parameters (PyTorch's gradients)", function()
    local loc, sc, c = T({ 0, 1, 2 }):requires_grad_(), T({ 1, 2, 0.5 }):requires_grad_(), T({ 0.5, 0, -0.3 }):requires_grad_()
    local d = D.GeneralizedPareto(loc, sc, c)
    assert.is_true(d.has_rsample)
    local y = replaying({ { 0.3, 0.6, 0.9 } }, function() return d:rsample() end)
    near(y, { 0.39045721866878724, 2.83258146374831, 2.831354610621213 }, 1e-14, "rsample")
    y:sum():backward()
    near(loc.grad, { 1, 1, 1 }, 1e-14, "loc grad")
    near(sc.grad, { 0.39045721866878724, 0.916290731874155, 1.6627092212424257 }, 1e-13, "scale grad")
    near(c.grad, { 0.07170175711905324, 0.0, 0.8478049471555744 }, 1e-13, "concentration grad")
    loc, sc, c = T({ 0, 1, 2 }):requires_grad_(), T({ 1, 2, 0.5 }):requires_grad_(), T({ 0.5, 0, -0.3 }):requires_grad_()
    local lp = D.GeneralizedPareto(loc, sc, c):log_prob(T({ 0.7, 2, 2.5 }))
    near(lp, { -0.9003137773510141, -1.1931471805599454, -0.1390943552970969 }, 1e-14, "log_prob")
    lp:sum():backward()
    near(loc.grad, { 1.111111111111111, 0.5, 2.0000000000000004 }, 1e-13, "loc grad")
    near(sc.grad, { -0.22222222222222243, -0.25, 4.440892098500626e-16 }, 1e-13, "scale grad")
    near(c.grad, { -0.35513718575420294, 0.0, -0.629721599319248 }, 1e-13, "concentration grad")
  end)

  it("sample: shape, support, mean; support and arg_constraints", function()
    wick.manual_seed(9)
    local d = D.GeneralizedPareto(T({ 0, 1, -2 }), T({ 1, 2, 0.5 }), T({ 0.2, -0.5, 0 }))
    local s = d:sample({ N })
    assert.are.same({ N, 3 }, s:size())
    assert.is_true(all_true(d.support.check(s)))
    local m, sd, sm = d.mean:totable(), d.stddev:totable(), s:mean(1):totable()
    for i = 1, 3 do
      assert.is_true(math.abs(sm[i] - m[i]) < 5 * sd[i] / math.sqrt(N), ("mean %d: %g, want %g"):format(i, sm[i], m[i]))
    end
    assert.are.equal("Interval(lower_bound=0.0, upper_bound=2.0)", tostring(D.GeneralizedPareto(0, 1, -0.5).support))
    assert.are.equal("Interval(lower_bound=1.0, upper_bound=inf)", tostring(D.GeneralizedPareto(1, 1, 0.5).support))
    assert.are.equal("Real()", tostring(D.GeneralizedPareto.arg_constraints.concentration))
    assert.are.equal("GreaterThan(lower_bound=0.0)", tostring(D.GeneralizedPareto.arg_constraints.scale))
    assert.are.equal("Real()", tostring(D.VonMises.support))
    assert.are.equal("GreaterThan(lower_bound=0.0)", tostring(D.VonMises.arg_constraints.concentration))
    assert.are.equal("Interval(lower_bound=0.0, upper_bound=1.0)", tostring(D.ContinuousBernoulli.support))
    assert.are.equal("Real()", tostring(D.ContinuousBernoulli.arg_constraints.logits))
    -- by name; numbers: the default dtype; expand
    local k = D.GeneralizedPareto({ loc = 1, scale = 2, concentration = 0.1 })
    assert.are.same({}, k.batch_shape)
    assert.are.equal(wick.get_default_dtype(), k:rsample().dtype)
    local e = D.GeneralizedPareto(T({ 0.5 }), 2, T({ 0.1, -0.2 })):expand({ 3, 2 })
    assert.are.same({ 3, 2 }, e.batch_shape)
    assert.are.same({ 4, 3, 2 }, e:sample(4):size())
    -- the long import paths
    assert.are.equal(D.GeneralizedPareto, D.generalized_pareto.GeneralizedPareto)
    assert.are.equal(D.VonMises, D.von_mises.VonMises)
    assert.are.equal(D.ContinuousBernoulli, D.continuous_bernoulli.ContinuousBernoulli)
  end)

  it("errors: PyTorch's messages", function()
    assert_error_has(function() D.GeneralizedPareto(0, -1, 0.5) end, "GeneralizedPareto: expected parameter scale",
      "GreaterThan(lower_bound=0.0)")
    assert_error_has(function() D.GeneralizedPareto(T(NAN), 1, 0.5) end, "expected parameter loc", "Real()")
    assert_error_has(function() D.GeneralizedPareto(0, 1, T(NAN)) end, "expected parameter concentration", "Real()")
    assert_error_has(function() D.GeneralizedPareto(0, 1) end, "GeneralizedPareto", "concentration")
    assert_error_has(function() D.GeneralizedPareto(T({ 0, 1 }), T({ 1, 1, 1 }), 0) end, "GeneralizedPareto")
    local d = D.GeneralizedPareto(0, 1, -0.5)
    assert_error_has(function() d:log_prob(T({ 2.5 })) end, "GeneralizedPareto:log_prob",
      "within the support (Interval(lower_bound=0.0, upper_bound=2.0))")
    assert_error_has(function() d:cdf(T({ -2.5 })) end, "GeneralizedPareto:cdf", "within the support")
    assert_error_has(function() d:log_survival_function(T(3)) end, "GeneralizedPareto:log_survival_function")
    assert_error_has(function() d:log_cdf(T(3)) end, "GeneralizedPareto:log_cdf")
    assert_error_has(function() D.GeneralizedPareto(T({ 0, 1 }), 1, 0.5):log_prob(T({ 0.5, 0.5 })) end,
      "GeneralizedPareto:log_prob", "within the support")
    assert_error_has(function() d:icdf("x") end, "GeneralizedPareto:icdf")
    assert_error_has(function() d:rsample({ 1e12, 1e12 }) end, "GeneralizedPareto:rsample", "too large")
    -- without validation, values outside the support are not checked (PyTorch's values: -inf below)
    assert.are.equal(-INF, D.GeneralizedPareto(T(0), 1, -0.5, false):log_prob(T(2)):item())
  end)
end)
