-- wick.distributions' LowRankMultivariateNormal, Wishart and LKJCholesky, and the KL divergences PyTorch
-- registers for LowRankMultivariateNormal, against PyTorch (torch 2.15, float64): every number in `cases`
-- was printed by PyTorch from the same expression (log_prob, entropy, the moments, the matrices, expand,
-- kl_divergence). Draws come from wick's own generator: checked by shape, support and moments (a fixed
-- seed), and by replaying PyTorch's own gamma, Dirichlet and normal draws through wick's samplers.
local wick = require("wick")
local support = require("spec.support")
local assert_error_has = support.assert_error_has
local D = wick.distributions
local F64 = { dtype = "float64" }
local NAN = 0 / 0
local function T(v) return wick.tensor(v, F64) end
local function all_true(mask) return mask:all() == true end
-- the largest |a - b| / max(|b|, 1e-300) over the elements (NaN where one is NaN and the other is not)
local function rel_diff(a, b)
  local x, y, worst = a:reshape(-1):totable(), b:reshape(-1):totable(), 0
  assert.are.equal(#y, #x)
  for i = 1, #x do
    if x[i] ~= y[i] then worst = math.max(worst, math.abs(x[i] - y[i]) / math.max(math.abs(y[i]), 1e-300)) end
  end
  return worst
end

local LR = D.LowRankMultivariateNormal
local kl = D.kl_divergence
local loc = T({1.0, 2.0, 3.0})
local W = T({{1.0, 0.5}, {0.2, -1.0}, {0.3, 0.4}})
local Dg = T({1.0, 2.0, 0.5})
local locB = T({{0.0, 0.0, 0.0}, {1.0, -1.0, 0.5}})
local W1 = T({{0.7}, {-0.3}, {1.2}})
local DB = T({{0.5, 1.0, 2.0}, {1.5, 0.3, 0.8}})
local x = T({0.5, 1.0, 2.0})
local xs = T({{0.5, 1.0, 2.0}, {-1.0, 0.0, 3.0}, {2.0, 2.0, 2.0}, {0.0, 0.0, 0.0}})
local qloc = T({0.5, -1.0, 2.0})
local S = T({{2.0, 0.3, 0.1}, {0.3, 1.5, -0.2}, {0.1, -0.2, 1.0}})
local SB = T({{{2.0, 0.3, 0.1}, {0.3, 1.5, -0.2}, {0.1, -0.2, 1.0}}, {{1.0, -0.4, 0.2}, {-0.4, 2.5, 0.5}, {0.2, 0.5, 0.8}}})
local X1 = T({{3.0, 0.5, 0.2}, {0.5, 2.0, 0.1}, {0.2, 0.1, 1.5}})
local XB = T({{{3.0, 0.5, 0.2}, {0.5, 2.0, 0.1}, {0.2, 0.1, 1.5}}, {{0.4, -0.1, 0.0}, {-0.1, 0.9, 0.3}, {0.0, 0.3, 2.2}}})
local S2 = T({{1.0, 0.2}, {0.2, 0.5}})
local X2 = T({{0.7, -0.1}, {-0.1, 0.3}})
local R3 = T({{1.0, 0.3, -0.2}, {0.3, 1.0, 0.4}, {-0.2, 0.4, 1.0}})
local R4 = T({{1.0, 0.5, -0.3, 0.1}, {0.5, 1.0, 0.2, -0.4}, {-0.3, 0.2, 1.0, 0.25}, {0.1, -0.4, 0.25, 1.0}})
local R2 = T({{1.0, -0.6}, {-0.6, 1.0}})
local LS, L3, L4, L2 = wick.linalg.cholesky(S), wick.linalg.cholesky(R3), wick.linalg.cholesky(R4), wick.linalg.cholesky(R2)
local L4B = wick.stack({ L4, wick.linalg.cholesky(wick.eye(4, F64) * 0.5 + 0.5) })
local torch_eye4 = wick.eye(4, F64)

-- { label, expression, PyTorch's values (flattened), PyTorch's shape }
local cases = {
  { 'LowRank', function() return LR(loc, W, Dg):log_prob(x) end, { -4.504708414068335 }, {  } },
  { 'LowRank', function() return LR(loc, W, Dg):log_prob(xs) end, { -4.504708414068335, -5.258979237347941, -4.885318393800021, -11.642146885258375 }, { 4 } },
  { 'LowRank', function() return LR(loc, W, Dg):entropy() end, { 4.967694612311749 }, {  } },
  { 'LowRank', function() return LR(loc, W, Dg).covariance_matrix end, { 2.25, -0.3, 0.5, -0.3, 3.04, -0.34, 0.5, -0.34, 0.75 }, { 3, 3 } },
  { 'LowRank', function() return LR(loc, W, Dg).precision_matrix end, { 0.5222468873660844, 0.013270919795386554, -0.3421484412701476, 0.013270919795386554, 0.3468535855612393, 0.14839301225750406, -0.3421484412701476, 0.14839301225750406, 1.628703793070167 }, { 3, 3 } },
  { 'LowRank', function() return LR(loc, W, Dg).scale_tril end, { 1.5, 0.0, 0.0, -0.19999999999999998, 1.7320508075688772, 0.0, 0.3333333333333333, -0.15780907357849774, 0.7835720676397195 }, { 3, 3 } },
  { 'LowRank', function() return LR(loc, W, Dg).variance end, { 2.25, 3.04, 0.75 }, { 3 } },
  { 'LowRank', function() return LR(loc, W, Dg).stddev end, { 1.5, 1.7435595774162695, 0.8660254037844386 }, { 3 } },
  { 'LowRank', function() return LR(loc, W, Dg).mean end, { 1.0, 2.0, 3.0 }, { 3 } },
  { 'LowRank', function() return LR(loc, W, Dg).mode end, { 1.0, 2.0, 3.0 }, { 3 } },
  { 'LowRank', function() return LR(locB, W1, DB):log_prob(x) end, { -4.561055035523487, -11.01799342975057 }, { 2 } },
  { 'LowRank', function() return LR(locB, W1, DB):log_prob(xs:unsqueeze(2)) end, { -4.561055035523487, -11.01799342975057, -6.491162562405208, -9.286475920022943, -8.198151809717036, -19.58965361133293, -3.2698363975306552, -4.301067359711658 }, { 4, 2 } },
  { 'LowRank', function() return LR(locB, W1, DB):entropy() end, { 4.769836397530655, 4.3617839615274825 }, { 2 } },
  { 'LowRank', function() return LR(locB, W1, DB).covariance_matrix end, { 0.99, -0.21, 0.84, -0.21, 1.09, -0.36, 0.84, -0.36, 3.44, 1.99, -0.21, 0.84, -0.21, 0.39, -0.36, 0.84, -0.36, 2.24 }, { 2, 3, 3 } },
  { 'LowRank', function() return LR(locB, W1, DB).precision_matrix end, { 1.2974910394265236, 0.1505376344086021, -0.3010752688172042, 0.1505376344086021, 0.967741935483871, 0.06451612903225805, -0.3010752688172042, 0.06451612903225805, 0.3709677419354839, 0.603112840466926, 0.13618677042801555, -0.20428015564202331, 0.13618677042801555, 3.0415045395590146, 0.43774319066147854, -0.20428015564202331, 0.43774319066147854, 0.5933852140077823 }, { 2, 3, 3 } },
  { 'LowRank', function() return LR(locB, W1, DB).scale_tril end, { 0.9949874371066199, 0.0, 0.0, -0.21105794120443452, 1.0224747162910903, 0.0, 0.8442317648177381, -0.17782168978975474, 1.6418441381303657, 1.4106735979665885, 0.0, 0.0, -0.14886505305175057, 0.6064974822535535, 0.0, 0.5954602122070021, -0.44741617543294937, 1.2981702128917239 }, { 2, 3, 3 } },
  { 'LowRank', function() return LR(locB, W1, DB).variance end, { 0.99, 1.09, 3.44, 1.99, 0.39, 2.24 }, { 2, 3 } },
  { 'LowRank', function() return LR(loc, W, DB).cov_factor end, { 1.0, 0.5, 0.2, -1.0, 0.3, 0.4, 1.0, 0.5, 0.2, -1.0, 0.3, 0.4 }, { 2, 3, 2 } },
  { 'LowRank', function() return LR(loc, W, Dg):expand({2, 2}):log_prob(xs:narrow(1, 1, 2):unsqueeze(2)) end, { -4.504708414068335, -4.504708414068335, -5.258979237347941, -5.258979237347941 }, { 2, 2 } },
  { 'LowRank', function() return LR(locB, W1, DB):expand({3, 2}):entropy() end, { 4.769836397530655, 4.3617839615274825, 4.769836397530655, 4.3617839615274825, 4.769836397530655, 4.3617839615274825 }, { 3, 2 } },
  { 'LowRank', function() return LR(locB, W1, DB):expand({3, 2}).scale_tril end, { 0.9949874371066199, 0.0, 0.0, -0.21105794120443452, 1.0224747162910903, 0.0, 0.8442317648177381, -0.17782168978975474, 1.6418441381303657, 1.4106735979665885, 0.0, 0.0, -0.14886505305175057, 0.6064974822535535, 0.0, 0.5954602122070021, -0.44741617543294937, 1.2981702128917239, 0.9949874371066199, 0.0, 0.0, -0.21105794120443452, 1.0224747162910903, 0.0, 0.8442317648177381, -0.17782168978975474, 1.6418441381303657, 1.4106735979665885, 0.0, 0.0, -0.14886505305175057, 0.6064974822535535, 0.0, 0.5954602122070021, -0.44741617543294937, 1.2981702128917239, 0.9949874371066199, 0.0, 0.0, -0.21105794120443452, 1.0224747162910903, 0.0, 0.8442317648177381, -0.17782168978975474, 1.6418441381303657, 1.4106735979665885, 0.0, 0.0, -0.14886505305175057, 0.6064974822535535, 0.0, 0.5954602122070021, -0.44741617543294937, 1.2981702128917239 }, { 3, 2, 3, 3 } },
  { 'LowRank', function() return LR{loc = loc, cov_factor = W, cov_diag = Dg}:log_prob(x) end, { -4.504708414068335 }, {  } },
  { 'KL', function() return kl(LR(loc, W, Dg), LR(qloc, W1, DB)) end, { 6.125591606007437, 18.600590646232597 }, { 2 } },
  { 'KL', function() return kl(LR(locB, W1, DB), LR(loc, W, Dg)) end, { 9.777615356948838, 8.93720601320102 }, { 2 } },
  { 'KL', function() return kl(LR(locB, W1, Dg), D.MultivariateNormal(qloc, S)) end, { 2.487414890130079, 1.6048783221671812 }, { 2 } },
  { 'KL', function() return kl(LR(loc, W, Dg), D.MultivariateNormal(locB, SB)) end, { 7.122999837271584, 4.9798688229611106 }, { 2 } },
  { 'KL', function() return kl(D.MultivariateNormal(qloc, SB), LR(loc, W, Dg)) end, { 2.9668457673505406, 3.108978974397517 }, { 2 } },
  { 'KL', function() return kl(D.MultivariateNormal(locB, { scale_tril = LS }), LR(qloc, W1, DB)) end, { 1.5912240489220864, 2.099594042942762 }, { 2 } },
  { 'Wishart', function() return D.Wishart(4.5, S):log_prob(X1) end, { -10.334210794996075 }, {  } },
  { 'Wishart', function() return D.Wishart(4.5, S):log_prob(XB) end, { -10.334210794996075, -10.357484141708449 }, { 2 } },
  { 'Wishart', function() return D.Wishart(4.5, S):entropy() end, { 14.48141586725059 }, {  } },
  { 'Wishart', function() return D.Wishart(4.5, S).mean end, { 9.0, 1.3499999999999999, 0.45, 1.3499999999999999, 6.75, -0.9, 0.45, -0.9, 4.5 }, { 3, 3 } },
  { 'Wishart', function() return D.Wishart(4.5, S).mode end, { 1.0, 0.15, 0.05, 0.15, 0.75, -0.1, 0.05, -0.1, 0.5 }, { 3, 3 } },
  { 'Wishart', function() return D.Wishart(4.5, S).variance end, { 36.0, 13.905, 9.044999999999998, 13.905, 20.25, 6.93, 9.044999999999998, 6.93, 9.0 }, { 3, 3 } },
  { 'Wishart', function() return D.Wishart(4.5, S).precision_matrix end, { 0.5208704958972529, -0.11416339636104174, -0.07491972886193364, -0.11416339636104172, 0.7099536211202284, 0.15340706386014985, -0.07491972886193364, 0.15340706386014985, 1.0381733856582234 }, { 3, 3 } },
  { 'Wishart', function() return D.Wishart(4.5, S).scale_tril end, { 1.4142135623730951, 0.0, 0.0, 0.21213203435596423, 1.2062338081814818, 0.0, 0.07071067811865475, -0.17824073454228082, 0.9814429379998759 }, { 3, 3 } },
  { 'Wishart', function() return D.Wishart(T({3.5, 6.}), { precision_matrix = S }):log_prob(XB) end, { -9.50906138344477, -8.235424938666139 }, { 2 } },
  { 'Wishart', function() return D.Wishart(T({3.5, 6.}), { precision_matrix = S }):entropy() end, { 8.818744871853497, 11.743702107959155 }, { 2 } },
  { 'Wishart', function() return D.Wishart(T({3.5, 6.}), { precision_matrix = S }).mean end, { 1.823046735640385, -0.399571887263646, -0.26221905101676773, -0.399571887263646, 2.484837673920799, 0.5369247235105243, -0.26221905101676773, 0.5369247235105243, 3.633606849803782, 3.125222975383517, -0.6849803781662503, -0.4495183731716018, -0.6849803781662503, 4.25972172672137, 0.920442383160899, -0.4495183731716018, 0.920442383160899, 6.229040313949341 }, { 2, 3, 3 } },
  { 'Wishart', function() return D.Wishart(T({3.5, 6.}), { precision_matrix = S }).mode end, { NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, 1.0417409917945057, -0.22832679272208345, -0.14983945772386728, -0.22832679272208345, 1.4199072422404566, 0.30681412772029965, -0.14983945772386728, 0.30681412772029965, 2.0763467713164467 }, { 2, 3, 3 } },
  { 'Wishart', function() return D.Wishart(T({3.5, 6.}), { precision_matrix = S }).covariance_matrix end, { 0.5208704958972529, -0.11416339636104172, -0.07491972886193364, -0.11416339636104172, 0.7099536211202283, 0.15340706386014982, -0.07491972886193364, 0.15340706386014982, 1.0381733856582234, 0.5208704958972529, -0.11416339636104172, -0.07491972886193364, -0.11416339636104172, 0.7099536211202283, 0.15340706386014982, -0.07491972886193364, 0.15340706386014982, 1.0381733856582234 }, { 2, 3, 3 } },
  { 'Wishart', function() return D.Wishart(5., { scale_tril = LS }):log_prob(XB) end, { -10.797401784787674, -11.434030533153551 }, { 2 } },
  { 'Wishart', function() return D.Wishart(5., { scale_tril = LS }):entropy() end, { 15.020043614475604 }, {  } },
  { 'Wishart', function() return D.Wishart(T({3., 7.}), { covariance_matrix = SB }):log_prob(X1) end, { -10.11912739962337, -12.81160501366409 }, { 2 } },
  { 'Wishart', function() return D.Wishart(T({3., 7.}), { covariance_matrix = SB }):entropy() end, { 11.63682330331634, 15.193197218655797 }, { 2 } },
  { 'Wishart', function() return D.Wishart(T({3., 7.}), { covariance_matrix = SB }).variance end, { 24.0, 9.27, 6.029999999999999, 9.27, 13.5, 4.62, 6.029999999999999, 4.62, 6.0, 14.0, 18.62, 5.880000000000001, 18.62, 87.5, 15.75, 5.880000000000001, 15.75, 8.96 }, { 2, 3, 3 } },
  { 'Wishart', function() return D.Wishart(T({{3.}, {7.}}), { covariance_matrix = SB }):log_prob(XB) end, { -10.11912739962337, -7.797381171510556, -13.778261262946021, -15.03403978142147 }, { 2, 2 } },
  { 'Wishart', function() return D.Wishart(1.5, S2):log_prob(X2) end, { -2.063914163444168 }, {  } },
  { 'Wishart', function() return D.Wishart(1.5, S2):entropy() end, { 0.49333096661336073 }, {  } },
  { 'Wishart', function() return D.Wishart(4.5, S):expand({3}):log_prob(X1) end, { -10.334210794996075, -10.334210794996075, -10.334210794996075 }, { 3 } },
  { 'Wishart', function() return D.Wishart(T({3.5, 6.}), { precision_matrix = S }):expand({2, 2}):entropy() end, { 8.818744871853497, 11.743702107959155, 8.818744871853497, 11.743702107959155 }, { 2, 2 } },
  { 'Wishart', function() return D.Wishart{ df = 4.5, covariance_matrix = S }:log_prob(X1) end, { -10.334210794996075 }, {  } },
  { 'LKJCholesky', function() return D.LKJCholesky(3, T(0.7)):log_prob(L3) end, { -2.0076118029386647 }, {  } },
  { 'LKJCholesky', function() return D.LKJCholesky(3, T(1.)):log_prob(L3) end, { -1.6434679308744755 }, {  } },
  { 'LKJCholesky', function() return D.LKJCholesky(4, T({0.5, 1., 2.5})):log_prob(L4) end, { -3.5695110834659003, -2.8931090923465597, -2.9214998767686873 }, { 3 } },
  { 'LKJCholesky', function() return D.LKJCholesky(4, T({{0.5}, {2.5}})):log_prob(L4B) end, { -3.5695110834659003, -3.7946115844406787, -2.9214998767686873, -2.472855744458359 }, { 2, 2 } },
  { 'LKJCholesky', function() return D.LKJCholesky(4, T(3.)):log_prob(torch_eye4) end, { 0.24113980284405123 }, {  } },
  { 'LKJCholesky', function() return D.LKJCholesky(2, T(3.)):log_prob(L2) end, { -0.9571127263944099 }, {  } },
  { 'LKJCholesky', function() return D.LKJCholesky(3, T(0.7)):expand({2}):log_prob(L3) end, { -2.0076118029386647, -2.0076118029386647 }, { 2 } },
  { 'LKJCholesky', function() return D.LKJCholesky{ dim = 3, concentration = T(2.) }:log_prob(L3) end, { -1.0751284009078783 }, {  } },
}

-- PyTorch's draws (torch.manual_seed(0)): D.Wishart(T({4.5, 7.}), {covariance_matrix = S}):rsample({2}) made its
-- sample from these _standard_gamma and randn values, D.LKJCholesky(4, T({0.5, 2.})):sample({3}) from these
-- _sample_dirichlet and randn values (with its _beta's first parameter i / 2 for row i, as the onion method's:
-- PyTorch's own is i - 1/2, which draws matrices of the wrong law from dim 3 on)
local wishart_gamma = T({{{0.8153296698966248, 0.9003238674107212, 0.8785084787216829}, {3.70754252630683, 1.2547642832379866, 1.797461956179074}}, {{6.409545310289593, 1.3749230368217646, 2.4232859390433137}, {11.040737459968488, 1.7263696448111976, 1.7737673742131295}}})
local wishart_gamma_shape = {2, 2, 3}
local wishart_randn = T({{{-0.1334417428738957, 1.354914397796449, -0.01122945651004727}, {0.5928013654438641, 0.806714964071833, 0.3173888737549374}}, {{-0.3673704387693386, 0.6444793308634464, -1.6420415188485646}, {0.301409537025466, -0.9763757780554743, -0.02543664908531988}}})
local wishart_randn_shape = {2, 2, 3}
local wishart_sample = T({{{{3.261318679586499, 0.1985146763964565, 2.6074690132445357}, {0.1985146763964565, 2.632025933461919, -0.24626302218585094}, {2.6074690132445357, -0.24626302218585094, 3.8397187101368546}}, {{14.830170105227324, 4.978207341404889, 3.3836127481136424}, {4.978207341404889, 5.322454021935313, 1.1914954271110358}, {3.3836127481136424, 1.1914954271110358, 4.2355847331273395}}}, {{{25.63818124115837, 1.6019521580030611, 4.816173734280213}, {1.6019521580030611, 4.101120918780883, -3.513841068229116}, {4.816173734280213, -3.513841068229116, 9.210275873534368}}, {{44.162949839873946, 9.040557042259906, -4.51699067053307}, {9.040557042259906, 6.874419824290806, -1.7229629015643964}, {-4.51699067053307, -1.7229629015643964, 4.005943417355072}}}})
local lkj_dirichlet_concentration = T({{{0.5, 1.5}, {0.5, 1.5}, {1.0, 1.0}, {1.5, 0.5}}, {{0.5, 3.0}, {0.5, 3.0}, {1.0, 2.5}, {1.5, 2.0}}})
local lkj_dirichlet = T({{{{0.22183115700727954, 0.7781688429927205}, {0.6744655107659374, 0.3255344892340626}, {0.8346942767210859, 0.1653057232789141}, {0.34966401312691286, 0.650335986873087}}, {{0.0030260973251359895, 0.996973902674864}, {0.04505781858096712, 0.9549421814190329}, {0.10296653670582957, 0.8970334632941704}, {0.3280642761805967, 0.6719357238194034}}}, {{{0.45351977358557594, 0.5464802264144241}, {0.24271860853520597, 0.757281391464794}, {0.6384774106950473, 0.3615225893049527}, {0.8045239716604529, 0.19547602833954714}}, {{0.2061731853838814, 0.7938268146161185}, {0.2695482103841347, 0.7304517896158653}, {0.3523265060048071, 0.6476734939951929}, {0.15411170610981076, 0.8458882938901893}}}, {{{0.056709917949458406, 0.9432900820505415}, {0.16523185845690827, 0.8347681415430918}, {0.9154218325340947, 0.08457816746590521}, {0.9987860521607835, 0.001213947839216415}}, {{0.37418708560031994, 0.6258129143996801}, {0.07106504861220843, 0.9289349513877915}, {0.19566587780612574, 0.8043341221938743}, {0.3329748016983556, 0.6670251983016444}}}})
local lkj_dirichlet_shape = {3, 2, 4, 2}
local lkj_randn = T({{{{-0.5226465471538572, -0.02515568815971389, 1.7607687519099702, 0.7085323264931883}, {-0.6684715851233203, -0.8257825337351228, 0.3012035131535972, -0.8903969380418159}, {0.13550044221115567, -0.827100446040141, -0.9382828522884271, -1.0607577697273647}, {-1.5515955644398478, -0.3147449188293934, 0.2538645573618449, -1.0197709154751475}}, {{0.5235634190464344, 1.2435898054051029, -0.34402228059155376, -0.26976220023132946}, {0.3299808176367346, -1.752174363636735, -0.49502963336049505, 0.48613811203025575}, {1.8028488541891268, -0.12416886068966111, 1.5748034330841199, 0.9679524430946587}, {0.5162275408780806, 1.3571352471870293, 0.8485747701414793, -0.4956591550551049}}}, {{{-1.8786837021539853, 0.1266069384424346, 0.1712932857619575, 0.6233641523288427}, {0.6583935171517025, -0.09950746068297917, -0.817856878055151, 2.1964007674430595}, {2.278961425130624, 0.5660368464782041, -0.6233103200204941, 0.30533383780769996}, {-0.7667240679927507, 0.626810757903625, -0.3075017212723769, -1.6228991909235149}}, {{-1.6593525515068692, 0.5836031262099599, 0.6934290394613872, 1.3160164986265102}, {-1.0149229351298659, -0.37166763032848815, -1.5157372219780758, -0.37283272653737265}, {0.2575946432359034, 0.610810767132084, 0.7409750972969411, -0.1424566826487997}, {1.2731867729446975, -0.49969238110440073, -0.38178274049489586, 1.2868685463517322}}}, {{{-0.040029294933905106, 0.2013256572832817, -0.6378982586738978, -1.1048124571874474}, {-0.8716150352096671, 2.096924031490448, 0.11838756456837449, 0.30422110340957825}, {0.08770849476298616, 0.9671457622353075, 0.4513316502474123, -1.478911578407297}, {-1.7387301158268127, -0.14411546377394238, -0.005090541258527067, -0.032128612171207}}, {{0.7329306319152914, 2.6170368357139764, 0.13675936750093962, 1.206413240657461}, {-0.40137183675269417, 0.9952646561637, -0.5481679081161677, -1.0361198520454074}, {2.519645195794351, -1.0069747852436242, -1.283568863827948, 1.8333821082770114}, {-0.10780657682639128, 0.7774505628220948, -0.6329026601313472, 0.6442357003848705}}}})
local lkj_randn_shape = {3, 2, 4, 4}
local lkj_sample = T({{{{1.0, 0.0, 0.0, 0.0}, {-0.8212584920510335, 0.5705562980408353, 0.0, 0.0}, {0.14770493855214611, -0.9015972093171055, 0.4065780654178409, 0.0}, {-0.5722111377926591, -0.11607441542464365, 0.09362241717009151, 0.8064341181231652}}, {{1.0, 0.0, 0.0, 0.0}, {0.2122682703113377, 0.9772114312773018, 0.0, 0.0}, {0.3201256192231415, -0.022048234007053285, 0.9471185054121636, 0.0}, {0.1758131255045421, 0.46220352586086155, 0.289001594740771, 0.8197168558834222}}}, {{{1.0, 0.0, 0.0, 0.0}, {0.4926648034264331, 0.8702191628921958, 0.0, 0.0}, {0.7754858627030653, 0.19261123394737276, 0.6012674856542244, 0.0}, {-0.6631942815276299, 0.5421732897076789, -0.2659801506448493, 0.4421267107284373}}, {{1.0, 0.0, 0.0, 0.0}, {-0.5191803254979283, 0.8546647235120128, 0.0, 0.0}, {0.23065205287225757, 0.5469242511633766, 0.8047816436743529, 0.0}, {0.35197810982736, -0.13814216698895868, -0.1055455257780469, 0.9197218568079097}}}, {{{1.0, 0.0, 0.0, 0.0}, {-0.4064872180732234, 0.9136564680136028, 0.0, 0.0}, {0.08641353573487805, 0.9528664824496094, 0.2908232581240799, 0.0}, {-0.9959732747499537, -0.08255171351235663, -0.002915945954668193, 0.0348417542499883}}, {{1.0, 0.0, 0.0, 0.0}, {-0.26658028549052243, 0.9638127159297036, 0.0, 0.0}, {0.4107532757476977, -0.1641573156111587, 0.8968467662838921, 0.0}, {-0.06169815376666841, 0.44493820120293454, -0.3622128333320577, 0.8167161063072311}}}})
local lkj_sample_log_prob = T({{-4.231782722077278, -1.461893628096494}, {-3.2086237883932474, -2.256203828086925}, {-0.619134219923613, -1.688070263959464}})

-- the gradients of log_prob (+ entropy) to the parameters, by PyTorch
local grads = {
  lowrank_grads = { {0.33877038895859446, -2.509410288582183, -8.030112923462987}, {{-0.48757101527437374, -1.1555968239722358}, {2.0232300702668597, 1.3095666942626094}, {5.219994870811798, 2.382219518467952}}, {0.2801511743965812, 0.5379037536832331, 12.580235437768277} },
  wishart_grads = { {0.4058940552964463, -1.9991646326661208}, {{-0.5583948841086066, -0.33927095818176595, -0.37157705854931833}, {-0.05196717692630347, -0.3435595371144107, 1.162175607895415}, {0.010090713966272577, 0.686468393287315, 1.537800576786692}} },
  lkj_grads = { {2.2725655957915465, -0.2392785153546817} },
}

describe("wick.distributions: PyTorch's values (float64)", function()
  it("log_prob, entropy, the moments and matrices, expand and the KL divergences", function()
    support.assert_value_cases(cases, { quiet = true, exact_zero = true }) -- (Wishart's low df warning)
  end)

  it("the gradients of log_prob (+ entropy) to the parameters, as PyTorch's", function()
    local l, w, dg = T({ 1, 2, 3 }):requires_grad_(), T({ { 1, 0.5 }, { 0.2, -1 }, { 0.3, 0.4 } }):requires_grad_(),
      T({ 1, 2, 0.5 }):requires_grad_()
    local d = LR(l, w, dg)
    local total = d:log_prob(xs):sum() + d:entropy()
    total:backward()
    assert.is_true(rel_diff(l.grad, T(grads.lowrank_grads[1])) < 1e-13)
    assert.is_true(rel_diff(w.grad, T(grads.lowrank_grads[2])) < 1e-13)
    assert.is_true(rel_diff(dg.grad, T(grads.lowrank_grads[3])) < 1e-13)
    local df, L = T({ 4.5, 6 }):requires_grad_(), LS:clone():requires_grad_()
    local wi = D.Wishart(df, { scale_tril = L })
    total = wi:log_prob(XB):sum() + wi:entropy():sum()
    total:backward()
    -- (the entropy's trigamma: PyTorch's is good to ~4e-10, trigamma(2) = pi^2 / 6 - 1 is 0.6449340670881899
    -- there, 0.6449340668482265 in wick)
    assert.is_true(rel_diff(df.grad, T(grads.wishart_grads[1])) < 1e-9)
    -- (the lower triangle: the upper one does not enter the distribution)
    assert.is_true(rel_diff(L.grad:tril(), T(grads.wishart_grads[2]):tril()) < 1e-12)
    local c = T({ 0.5, 2 }):requires_grad_()
    D.LKJCholesky(4, c):log_prob(L4):sum():backward()
    assert.is_true(rel_diff(c.grad, T(grads.lkj_grads[1])) < 1e-13)
  end)

  it("a low-rank normal is the MultivariateNormal of its covariance (KL 0 to it, any rank)", function()
    local p = LR(locB, W1, DB)
    local q = D.MultivariateNormal(locB, p.covariance_matrix)
    assert.is_true(rel_diff(p:log_prob(xs:unsqueeze(2)), q:log_prob(xs:unsqueeze(2))) < 1e-13)
    assert.is_true(rel_diff(p:entropy(), q:entropy()) < 1e-13)
    -- (a batched cov_diag beside an unbatched cov_factor: PyTorch's KL(LowRank || MultivariateNormal) fails there)
    assert.is_true(kl(p, q):abs():max():item() < 1e-13)
    assert.is_true(kl(q, p):abs():max():item() < 1e-13)
    assert.is_true(kl(p, p):abs():max():item() < 1e-13)
    assert.is_true(rel_diff(kl(p, D.MultivariateNormal(qloc, S)), kl(q, D.MultivariateNormal(qloc, S))) < 1e-12)
    -- rank 0: the diagonal normal (PyTorch's fails on an empty cov_factor)
    local r0 = LR(loc, wick.zeros({ 3, 0 }, F64), Dg)
    local diag = D.Independent(D.Normal(loc, Dg:sqrt()), 1)
    assert.is_true(rel_diff(r0:log_prob(xs), diag:log_prob(xs)) < 1e-13)
    assert.is_true(rel_diff(r0:entropy(), diag:entropy()) < 1e-13)
    assert.are.same({ 5, 3 }, r0:rsample({ 5 }):size())
  end)
end)

describe("wick.distributions: LowRankMultivariateNormal", function()
  it("draws: shapes, moments, gradients", function()
    wick.manual_seed(3)
    local d = LR(loc, W, Dg)
    assert.are.same({}, d.batch_shape)
    assert.are.same({ 3 }, d.event_shape)
    assert.is_true(d.has_rsample)
    local N = 20000
    local s = d:sample({ N })
    assert.are.same({ N, 3 }, s:size())
    local m = s:mean(1)
    local sd = d.stddev:totable()
    for i = 1, 3 do
      assert.is_true(math.abs(m[i]:item() - loc[i]:item()) < 5 * sd[i] / math.sqrt(N))
    end
    local c = s - m
    local cov = c:transpose(1, 2):matmul(c) / (N - 1)
    assert.is_true((cov - d.covariance_matrix):abs():max():item() < 0.15)
    assert.are.same({ 4, 2, 3 }, LR(locB, W1, DB):sample({ 4 }):size())
    assert.are.same({ 2, 3 }, LR(locB, W1, DB):sample():size())
    assert.are.same({ 5, 2, 3 }, LR(locB, W1, DB):sample(5):size())
    assert.are.same({ 3, 2, 3 }, LR(loc, W, Dg):expand({ 3, 2 }):sample():size())
    -- rsample: d/dloc of the sum of n draws is n; gradients reach cov_factor and cov_diag
    local l, w, dg = loc:clone():requires_grad_(), W:clone():requires_grad_(), Dg:clone():requires_grad_()
    LR(l, w, dg):rsample({ 7 }):sum():backward()
    assert.are.same({ 7, 7, 7 }, l.grad:totable())
    assert.are.same({ 3, 2 }, w.grad:size())
    assert.are.same({ 3 }, dg.grad:size())
  end)

  it("errors: PyTorch's messages", function()
    assert_error_has(function() LR(T({ 0, 0, 0 }), T({ { 1, 2 }, { 3, 4 } }), T({ 1, 1, 1 })) end,
      "LowRankMultivariateNormal: cov_factor must be a batch of matrices with shape 3 x m")
    assert_error_has(function() LR(T({ 0, 0, 0 }), T({ { 1 }, { 2 }, { 3 } }), T({ 1, 1 })) end,
      "cov_diag must be a batch of vectors with shape [3]")
    assert_error_has(function() LR(T(0), T({ { 1 } }), T({ 1 })) end, "loc must be at least one-dimensional.")
    assert_error_has(function() LR(T({ 0 }), T({ 1 }), T({ 1 })) end,
      "cov_factor must be at least two-dimensional, with optional leading batch dimensions")
    assert_error_has(function() LR(locB, T({ { { 1 }, { 2 }, { 3 } }, { { 1 }, { 2 }, { 3 } }, { { 1 }, { 2 }, { 3 } } }), Dg) end,
      "Incompatible batch shapes: loc [2, 3], cov_factor [3, 3, 1], cov_diag [3]")
    assert_error_has(function() LR(loc, W, T({ 1, -1, 1 })) end, "expected parameter cov_diag",
      "IndependentConstraint(GreaterThan(lower_bound=0.0), 1)")
    assert_error_has(function() LR(T({ NAN, 0, 0 }), W, Dg) end, "expected parameter loc", "IndependentConstraint(Real(), 1)")
    assert_error_has(function() LR(loc, W * NAN, Dg) end, "expected parameter cov_factor", "IndependentConstraint(Real(), 2)")
    assert_error_has(function() LR(loc, W, -Dg, false) end, "LowRankMultivariateNormal: the capacitance matrix")
    assert_error_has(function() LR(nil, W, Dg) end, "LowRankMultivariateNormal: expected a tensor for argument 'loc'")
    assert_error_has(function() LR(loc, "W", Dg) end, "expected a tensor for argument 'cov_factor'")
    assert_error_has(function() LR(loc, W, Dg, { foo = 1 }) end, "unknown option 'foo'")
    assert_error_has(function() LR(loc, W, Dg):log_prob(T({ 1, 2 })) end,
      "LowRankMultivariateNormal:log_prob: The right-most size of value must match event_shape")
    assert_error_has(function() LR(loc, W, Dg):log_prob(T({ NAN, 1, 2 })) end, "to be within the support")
    assert_error_has(function() LR(loc, W, Dg):rsample({ -1 }) end, "LowRankMultivariateNormal:rsample", "sample_shape")
    assert_error_has(function() LR(locB, W1, DB):expand({ 3 }) end, "LowRankMultivariateNormal:expand")
    assert_error_has(function() local d = LR(loc, W, Dg); return d.log_prob(xs) end, "expected a LowRankMultivariateNormal as self")
    assert_error_has(function() kl(LR(loc, W, Dg), LR(T({ 0, 0 }), T({ { 1 }, { 1 } }), T({ 1, 1 }))) end,
      "KL-divergence between two Low Rank Multivariate Normals with different event shapes cannot be computed")
    assert_error_has(function() kl(D.MultivariateNormal(T({ 0, 0 }), wick.eye(2, F64)), LR(loc, W, Dg)) end,
      "KL-divergence between two (Low Rank) Multivariate Normals with different event shapes cannot be computed")
    assert_error_has(function() kl(LR(loc, W, Dg), D.MultivariateNormal(T({ 0, 0 }), wick.eye(2, F64))) end,
      "(Low Rank) Multivariate Normals with different event shapes")
  end)
end)

describe("wick.distributions: Wishart", function()
  it("rsample replays PyTorch's draws exactly (Bartlett's decomposition)", function()
    local g0, r0 = wick._standard_gamma, wick.randn
    local asked = {}
    wick._standard_gamma = function(c) asked[#asked + 1] = c:size(); return wishart_gamma end
    wick.randn = function(shape) asked[#asked + 1] = shape; return wishart_randn end
    local ok, s = pcall(function() return D.Wishart(T({ 4.5, 7 }), S):rsample({ 2 }) end)
    wick._standard_gamma, wick.randn = g0, r0
    assert(ok, s)
    assert.are.same({ wishart_gamma_shape, wishart_randn_shape }, { asked[1], { unpack(asked[2]) } })
    assert.is_true(rel_diff(s, wishart_sample) < 1e-14)
  end)

  it("draws: positive-definite, of mean df Sigma; a singular draw is drawn again", function()
    wick.manual_seed(5)
    local d = D.Wishart(T(4.5), S)
    assert.is_true(d.has_rsample)
    local N = 10000
    local s = d:sample({ N })
    assert.are.same({ N, 3, 3 }, s:size())
    assert.is_true(all_true(D.constraints.positive_definite:check(s)))
    local m, sd = s:mean(1), d.variance:sqrt()
    assert.is_true(all_true((m - d.mean):abs():le(sd * (5 / math.sqrt(N)))))
    assert.are.same({ 4, 2, 3, 3 }, D.Wishart(T({ 3.5, 6 }), { precision_matrix = S }):sample({ 4 }):size())
    assert.are.same({ 3, 2, 2 }, D.Wishart(T(3), S2):expand({ 3 }):rsample():size())
    -- gradients to the scale
    local L = LS:clone():requires_grad_()
    D.Wishart(5, { scale_tril = L }):rsample({ 3 }):sum():backward()
    assert.are.same({ 3, 3 }, L.grad:size())
    -- a first draw that is not positive-definite (NaN chi2 draws here) is replaced, with PyTorch's warning
    local g0, calls = wick._standard_gamma, 0
    wick._standard_gamma = function(...)
      calls = calls + 1
      local z = g0(...)
      if calls == 1 then return z * NAN end
      return z
    end
    local ok, got = pcall(support.warnings_of, function() s = D.Wishart(T(4.5), S):rsample({ 2 }) end)
    wick._standard_gamma = g0
    assert(ok, got)
    assert.are.equal(2, calls)
    assert.are.equal(1, #got)
    assert.is_truthy(got[1]:find("Singular sample detected.", 1, true))
    assert.is_true(all_true(D.constraints.positive_definite:check(s)))
    -- low df: PyTorch's warning
    local w = support.warnings_of(function() D.Wishart(1.5, S2) end)
    assert.is_truthy(w[1] and w[1]:find("Low df values detected. Singular samples are highly likely to occur for ndim - 1 "
      .. "< df < ndim.", 1, true))
  end)

  it("errors: PyTorch's messages", function()
    assert_error_has(function() D.Wishart(1, S) end, "Wishart: Value of df=1 expected to be greater than ndim - 1 = 2.")
    assert_error_has(function() D.Wishart(T({ 3, 2 }), S) end, "expected to be greater than ndim - 1 = 2.")
    assert_error_has(function() D.Wishart(3.5, -S) end, "expected parameter covariance_matrix", "PositiveDefinite()")
    assert_error_has(function() D.Wishart(3.5, { precision_matrix = T({ { 1, 2, 0 }, { 2, 1, 0 }, { 0, 0, 1 } }) }) end,
      "expected parameter precision_matrix", "PositiveDefinite()")
    assert_error_has(function() D.Wishart(3.5, { scale_tril = -LS }) end, "expected parameter scale_tril", "LowerCholesky()")
    assert_error_has(function() D.Wishart(T({ NAN }), S) end, "expected parameter df", "GreaterThan(lower_bound=2)")
    assert_error_has(function() D.Wishart(3.5, { scale_tril = T({ 1, 2, 3 }) }) end,
      "scale_tril must be at least two-dimensional, with optional leading batch dimensions")
    assert_error_has(function() D.Wishart(3.5, T({ { 1, 2, 3 }, { 1, 2, 3 } })) end, "must be a batch of square matrices")
    assert_error_has(function() D.Wishart(3.5) end,
      "Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
    assert_error_has(function() D.Wishart(3.5, { covariance_matrix = S, precision_matrix = S }) end,
      "Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
    assert_error_has(function() D.Wishart(T({ 3.5, 4, 5 }), SB) end, "Wishart: df and covariance_matrix", "cannot be broadcast")
    assert_error_has(function() D.Wishart("4", S) end, "Wishart: expected a number for argument 'df'")
    assert_error_has(function() D.Wishart(4, S):log_prob(-S) end, "Wishart:log_prob: expected value argument",
      "within the support (PositiveDefinite())")
    assert_error_has(function() D.Wishart(4, S):log_prob(S2) end, "The right-most size of value must match event_shape")
    assert_error_has(function() D.Wishart(4, S):rsample({ 2 }, -1) end, "Wishart:rsample", "max_try_correction")
    assert_error_has(function() D.Wishart(4, S):expand({ 2, 0, 1 }):expand({ 3 }) end, "Wishart:expand")
  end)
end)

describe("wick.distributions: LKJCholesky", function()
  it("sample replays PyTorch's draws exactly (the onion method)", function()
    local d0, r0 = wick._sample_dirichlet, wick.randn
    local asked = {}
    wick._sample_dirichlet = function(c) asked[#asked + 1] = c:size(); return lkj_dirichlet end
    wick.randn = function(shape) asked[#asked + 1] = shape; return lkj_randn end
    local l = D.LKJCholesky(4, T({ 0.5, 2 }))
    local ok, s = pcall(function() return l:sample({ 3 }) end)
    wick._sample_dirichlet, wick.randn = d0, r0
    assert(ok, s)
    assert.are.same({ lkj_dirichlet_shape, lkj_randn_shape }, { asked[1], { unpack(asked[2]) } })
    assert.are.same(lkj_dirichlet_concentration:totable(), l._beta._dirichlet.concentration:totable())
    assert.is_true((s - lkj_sample):abs():max():item() < 1e-15)
    assert.is_true(rel_diff(l:log_prob(s), lkj_sample_log_prob) < 1e-13)
  end)

  it("draws: Cholesky factors of correlation matrices, correlations of variance 1 / (2 concentration + dim - 1)", function()
    wick.manual_seed(9)
    local d = D.LKJCholesky(3, T(2))
    assert.is_false(d.has_rsample)
    assert.are.same({ 3, 3 }, d.event_shape)
    local N = 20000
    local s = d:sample({ N })
    assert.are.same({ N, 3, 3 }, s:size())
    assert.is_true(all_true(D.constraints.corr_cholesky:check(s)))
    -- every correlation (r + 1) / 2 ~ Beta(b, b), b = concentration - 1 + dim / 2: mean 0, variance 1 / (2 b + 1)
    -- (PyTorch's sampler gives r_13 and r_23 a variance of 0.215 here)
    local r = s:matmul(s:transpose(-2, -1))
    local var = 1 / (2 * 2 + 3 - 1)
    for _, ij in ipairs({ { 1, 2 }, { 1, 3 }, { 2, 3 } }) do
      local x = r:select(2, ij[1]):select(2, ij[2])
      assert.is_true(math.abs(x:mean():item()) < 5 * math.sqrt(var / N))
      assert.is_true(math.abs((x * x):mean():item() - var) < 0.01)
    end
    assert.are.same({ 4, 2, 5, 5 }, D.LKJCholesky(5, T({ 0.5, 3 })):sample({ 4 }):size())
    assert.are.same({ 3, 2, 2, 2 }, D.LKJCholesky(2, T(1)):expand({ 3, 2 }):sample():size())
    assert.are.equal("float32", D.LKJCholesky(3):sample().dtype)
  end)

  it("errors: PyTorch's messages", function()
    assert_error_has(function() D.LKJCholesky(1, 1.0) end,
      "LKJCholesky: Expected dim to be an integer greater than or equal to 2. Found dim=1.")
    assert_error_has(function() D.LKJCholesky(2.5, 1.0) end, "LKJCholesky: expected an integer for argument 'dim'")
    assert_error_has(function() D.LKJCholesky(3, -1.0) end, "expected parameter concentration", "GreaterThan(lower_bound=0.0)")
    assert_error_has(function() D.LKJCholesky(3, "x") end, "LKJCholesky: expected a number for argument 'concentration'")
    assert_error_has(function() D.LKJCholesky(3, 1.0):log_prob(wick.eye(3, F64) * 2) end,
      "LKJCholesky:log_prob: expected value argument", "within the support (CorrCholesky())")
    assert_error_has(function() D.LKJCholesky(3, 1.0):log_prob(wick.eye(2, F64)) end,
      "The right-most size of value must match event_shape")
    assert_error_has(function() D.LKJCholesky(3, 1.0):rsample() end, "LKJCholesky:rsample: has no reparameterised draws")
    assert_error_has(function() D.LKJCholesky(3, 1.0, { foo = 1 }) end, "unknown option 'foo'")
    assert_error_has(function() D.LKJCholesky(100000, 1.0):sample() end, "out of memory")
  end)
end)

describe("wick.distributions: the matrix distributions' constraints and module names", function()
  it("support, arg_constraints, corr_cholesky, torch.distributions' module paths", function()
    local Cn = D.constraints
    local d = LR(loc, W, Dg)
    assert.are.equal("IndependentConstraint(Real(), 1)", tostring(d.support))
    assert.are.equal("IndependentConstraint(Real(), 2)", tostring(d.arg_constraints.cov_factor))
    assert.are.equal("IndependentConstraint(GreaterThan(lower_bound=0.0), 1)", tostring(d.arg_constraints.cov_diag))
    assert.are.equal("PositiveDefinite()", tostring(D.Wishart(4, S).support))
    assert.are.equal("GreaterThan(lower_bound=2.0)", tostring(D.Wishart(4, S).arg_constraints.df))
    assert.are.equal("LowerCholesky()", tostring(D.Wishart(4, S).arg_constraints.scale_tril))
    assert.are.equal("CorrCholesky()", tostring(D.LKJCholesky(3).support))
    assert.are.equal("GreaterThan(lower_bound=0.0)", tostring(D.LKJCholesky(3).arg_constraints.concentration))
    assert.are.equal(2, Cn.corr_cholesky.event_dim)
    assert.are.same({ true, false, false, false }, Cn.corr_cholesky:check(wick.stack({ L3, L3 * 1.01, L3:t(), -L3 })):totable())
    assert.is_true(Cn.corr_cholesky.check(wick.eye(4, F64)):item())
    assert.are.equal(D.LowRankMultivariateNormal, D.lowrank_multivariate_normal.LowRankMultivariateNormal)
    assert.are.equal(D.Wishart, D.wishart.Wishart)
    assert.are.equal(D.LKJCholesky, D.lkj_cholesky.LKJCholesky)
    assert.is_truthy(tostring(d):find("LowRankMultivariateNormal(loc: Size([3])", 1, true))
  end)
end)

describe("wick.distributions: the matrix distributions' supports and parameter constraints", function()
  it("are PyTorch's (Wishart's df bound follows p)", function()
    local d = D.LowRankMultivariateNormal(T({ 0, 0 }), T({ { 1 }, { 1 } }), T({ 1, 1 }))
    assert.are.equal("IndependentConstraint(Real(), 1)", tostring(d.support))
    assert.are.equal("IndependentConstraint(GreaterThan(lower_bound=0.0), 1)", tostring(d.arg_constraints.cov_diag))
    local w = D.Wishart(3, wick.eye(2, F64))
    assert.are.equal("PositiveDefinite()", tostring(w.support))
    assert.are.equal("GreaterThan(lower_bound=1.0)", tostring(w.arg_constraints.df))
    local l = D.LKJCholesky(3, 1.0)
    assert.are.equal("CorrCholesky()", tostring(l.support))
    assert.are.equal("GreaterThan(lower_bound=0.0)", tostring(l.arg_constraints.concentration))
  end)
end)
