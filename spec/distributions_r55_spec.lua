-- wick.distributions' Multinomial, OneHotCategoricalStraightThrough, HalfCauchy, InverseGamma,
-- Pareto, Kumaraswamy, FisherSnedecor, LogisticNormal, register_kl and the KL divergences across
-- families, against PyTorch (torch 2.15, float64): every number in `cases` was printed by PyTorch
-- from the same expression (log_prob, cdf, icdf, entropy, mean, variance, mode, kl_divergence).
-- Draws come from wick's own generator: checked by shape, support and moments (a fixed seed).
local wick = require("wick")
local support = require("spec.support")
local assert_error_has = support.assert_error_has
local D = wick.distributions
local F64 = { dtype = "float64" }
local INF, NAN = math.huge, 0 / 0
local function T(v) return wick.tensor(v, F64) end
local N = 20000
-- the sample mean of s along dim 1 within k standard errors of mean (sd the distribution's stddev)
local function mean_near(s, mean, sd, k)
  local sm = s:mean(1):reshape(-1):totable()
  mean, sd = type(mean) == "table" and mean or { mean }, type(sd) == "table" and sd or { sd }
  for i = 1, #mean do
    local tol = (k or 5) * sd[i] / math.sqrt(s:size(1))
    assert.is_true(math.abs(sm[i] - mean[i]) < tol, ("mean %d: %g, want %g +- %g"):format(i, sm[i], mean[i], tol))
  end
end
local function all_true(mask) return mask:all() == true end

-- { label, expression, PyTorch's values (flattened), PyTorch's shape }
local cases = {
    { 'Multinomial', function() return D.Multinomial(10, T({0.2, 0.3, 0.5})):log_prob(T({{4., 3., 3.}, {2., 2., 6.}, {0., 0., 10.}})) end, { -3.786271800122586, -2.6468375169342195, -6.931471805599453 }, { 3 } },
    { 'Multinomial', function() return D.Multinomial(10, T({0.2, 0.3, 0.5})):entropy() end, { 3.3412185163945143 }, {} },
    { 'Multinomial', function() return D.Multinomial(7, T({{1., 2., 3., 4.}, {0.5, 0.1, 0.1, 0.3}})):entropy() end, { 3.9752703653994774, 3.6902793359336385 }, { 2 } },
    { 'Multinomial', function() return D.Multinomial(7, T({{1., 2., 3., 4.}, {0.5, 0.1, 0.1, 0.3}})).mean end, { 0.7000000000000001, 1.4000000000000001, 2.1, 2.8000000000000003, 3.5, 0.7000000000000001, 0.7000000000000001, 2.1 }, { 2, 4 } },
    { 'Multinomial', function() return D.Multinomial(7, T({{1., 2., 3., 4.}, {0.5, 0.1, 0.1, 0.3}})).variance end, { 0.6300000000000001, 1.12, 1.47, 1.6800000000000002, 1.75, 0.6300000000000001, 0.6300000000000001, 1.47 }, { 2, 4 } },
    { 'Multinomial', function() return D.Multinomial(3, { logits = T({-1., 0.5, 2.}) }):log_prob(T({1., 0., 2.})) end, { -2.625321601303362 }, {} },
    { 'Multinomial', function() return D.Multinomial(3, { logits = T({-math.huge, 0.5, 2.}) }):log_prob(T({0., 1., 2.})) end, { -1.0056275452801477 }, {} },
    { 'Multinomial', function() return D.Multinomial(3, { logits = T({-math.huge, 0.5, 2.}) }):entropy() end, { 0.9335923159097104 }, {} },
    { 'Multinomial', function() return D.Multinomial(1, T({0.25, 0.75})):entropy() end, { 0.5623351446188083 }, {} },
    { 'Multinomial', function() return D.Multinomial(0, T({0.25, 0.75})):entropy() end, { 0.0 }, {} },
    { 'Multinomial', function() return D.Multinomial(100, T({1., 1., 1., 1.})):log_prob(T({21., 24., 30., 25.})) end, { -7.716770424825512 }, {} },
    { 'OneHotCategoricalStraightThrough', function() return D.OneHotCategoricalStraightThrough(T({0.1, 0.2, 0.7})):log_prob(T({{0., 1., 0.}, {0., 0., 1.}})) end, { -1.6094379124341003, -0.35667494393873245 }, { 2 } },
    { 'OneHotCategoricalStraightThrough', function() return D.OneHotCategoricalStraightThrough(T({0.1, 0.2, 0.7})):entropy() end, { 0.8018185525433373 }, {} },
    { 'OneHotCategoricalStraightThrough', function() return D.OneHotCategoricalStraightThrough({ logits = T({0.1, -2., 0.7}) }).variance end, { 0.22427426425002586, 0.03985763919376386, 0.23588529724971413 }, { 3 } },
    { 'HalfCauchy', function() return D.HalfCauchy(T({0.5, 2., 30.})):log_prob(T({0., 1.5, 100.})) end, { 0.2415644752704904, -1.5910169884778194, -6.346903391844535 }, { 3 } },
    { 'HalfCauchy', function() return D.HalfCauchy(T({0.5, 2., 30.})):cdf(T({0., 1.5, 100.})) end, { 0.0, 0.40966552939826695, 0.8144528418445154 }, { 3 } },
    { 'HalfCauchy', function() return D.HalfCauchy(T({0.5, 2., 30.})):icdf(T({0.1, 0.5, 0.99})) end, { 0.07919222016226822, 1.9999999999999998, 1909.702234886151 }, { 3 } },
    { 'HalfCauchy', function() return D.HalfCauchy(T({0.5, 2., 30.})):entropy() end, { 1.1447298858494, 2.5310242469692907, 5.2390744480715 }, { 3 } },
    { 'HalfCauchy', function() return D.HalfCauchy(T({0.5, 2., 30.})).mean end, { INF, INF, INF }, { 3 } },
    { 'HalfCauchy', function() return D.HalfCauchy(T({0.5, 2., 30.})).variance end, { INF, INF, INF }, { 3 } },
    { 'HalfCauchy', function() return D.HalfCauchy(T({0.5, 2., 30.})).mode end, { 0.0, 0.0, 0.0 }, { 3 } },
    { 'InverseGamma', function() return D.InverseGamma(T({0.5, 3., 7.5}), T({2., 0.25, 10.})):log_prob(T({0.7, 0.01, 3.})) end, { -2.547921793879486, -11.43134951996725, -2.9365138263156534 }, { 3 } },
    { 'InverseGamma', function() return D.InverseGamma(T({0.5, 3., 7.5}), T({2., 0.25, 10.})):cdf(T({0.7, 0.01, 3.})) end, { 0.01682740948275685, 4.701068978540945e-09, 0.9662482502361897 }, { 3 } },
    { 'InverseGamma', function() return D.InverseGamma(T({0.5, 3., 7.5}), T({2., 0.25, 10.})):entropy() end, { 4.71077716251678, -1.3842845209538135, 0.7895107136610413 }, { 3 } },
    { 'InverseGamma', function() return D.InverseGamma(T({0.5, 3., 7.5}), T({2., 0.25, 10.})).mean end, { INF, 0.125, 1.5384615384615385 }, { 3 } },
    { 'InverseGamma', function() return D.InverseGamma(T({0.5, 3., 7.5}), T({2., 0.25, 10.})).variance end, { INF, 0.015625, 0.4303388918773534 }, { 3 } },
    { 'InverseGamma', function() return D.InverseGamma(T({0.5, 3., 7.5}), T({2., 0.25, 10.})).mode end, { 1.3333333333333333, 0.0625, 1.1764705882352942 }, { 3 } },
    { 'Pareto', function() return D.Pareto(T({1.5, 0.2, 4.}), T({3., 0.5, 1.5})):log_prob(T({2., 0.2, 100.})) end, { -0.457581109247178, 0.916290731874155, -9.028018815182227 }, { 3 } },
    { 'Pareto', function() return D.Pareto(T({1.5, 0.2, 4.}), T({3., 0.5, 1.5})):cdf(T({2., 0.2, 100.})) end, { 0.578125, 0.0, 0.992 }, { 3 } },
    { 'Pareto', function() return D.Pareto(T({1.5, 0.2, 4.}), T({3., 0.5, 1.5})):icdf(T({0.3, 0.01, 0.999})) end, { 1.689371820665409, 0.2040608101214162, 399.99999999999983 }, { 3 } },
    { 'Pareto', function() return D.Pareto(T({1.5, 0.2, 4.}), T({3., 0.5, 1.5})):entropy() end, { 0.640186152773388, 2.083709268125845, 2.6474959196783927 }, { 3 } },
    { 'Pareto', function() return D.Pareto(T({1.5, 0.2, 4.}), T({3., 0.5, 1.5})).mean end, { 2.25, INF, 12.0 }, { 3 } },
    { 'Pareto', function() return D.Pareto(T({1.5, 0.2, 4.}), T({3., 0.5, 1.5})).variance end, { 1.6875, INF, INF }, { 3 } },
    { 'Pareto', function() return D.Pareto(T({1.5, 0.2, 4.}), T({3., 0.5, 1.5})).mode end, { 1.5, 0.2, 4.0 }, { 3 } },
    { 'Kumaraswamy', function() return D.Kumaraswamy(T({2., 0.5, 5.}), T({3., 0.7, 0.9})):log_prob(T({0.4, 0.01, 0.99})) end, { 0.5267619630643445, 1.2843711231927157, 1.7654492471843442 }, { 3 } },
    { 'Kumaraswamy', function() return D.Kumaraswamy(T({2., 0.5, 5.}), T({3., 0.7, 0.9})):cdf(T({0.4, 0.01, 0.99})) end, { 0.4072960000000001, 0.07109830231462899, 0.9337393282718174 }, { 3 } },
    { 'Kumaraswamy', function() return D.Kumaraswamy(T({2., 0.5, 5.}), T({3., 0.7, 0.9})):icdf(T({0.3, 0.01, 0.999})) end, { 0.33480740472307263, 0.00020320626523028656, 0.9999071509830487 }, { 3 } },
    { 'Kumaraswamy', function() return D.Kumaraswamy(T({2., 0.5, 5.}), T({3., 0.7, 0.9})):entropy() end, { -0.2084261358947218, -0.1645128438477773, -0.8684686470349112 }, { 3 } },
    { 'Kumaraswamy', function() return D.Kumaraswamy(T({2., 0.5, 5.}), T({3., 0.7, 0.9})).mean end, { 0.457142857142857, 0.43572984749455324, 0.8438368536187537 }, { 3 } },
    { 'Kumaraswamy', function() return D.Kumaraswamy(T({2., 0.5, 5.}), T({3., 0.7, 0.9})).variance end, { 0.04102040816326541, 0.11081564548452633, 0.019345309473052574 }, { 3 } },
    { 'Kumaraswamy', function() return D.Kumaraswamy(T({2., 0.5, 5.}), T({3., 0.7, 0.9})).mode end, { NAN, NAN, NAN }, { 3 } },
    { 'FisherSnedecor', function() return D.FisherSnedecor(T({5., 1., 0.5}), T({7., 3., 12.})):log_prob(T({1.3, 0.01, 40.})) end, { -1.0864761432241665, 1.295040663185186, -10.547266159985622 }, { 3 } },
    { 'FisherSnedecor', function() return D.FisherSnedecor(T({5., 1., 0.5}), T({7., 3., 12.})).mean end, { 1.4, 3.0, 1.2 }, { 3 } },
    { 'FisherSnedecor', function() return D.FisherSnedecor(T({5., 1., 0.5}), T({7., 3., 12.})).variance end, { 2.6133333333333333, NAN, 7.56 }, { 3 } },
    { 'FisherSnedecor', function() return D.FisherSnedecor(T({5., 1., 0.5}), T({7., 3., 12.})).mode end, { 0.4666666666666667, NAN, NAN }, { 3 } },
    { 'LogisticNormal', function() return D.LogisticNormal(T({{0.1, -0.3}, {2., 0.}}), T({{1., 2.}, {0.5, 0.3}})):log_prob(T({0.2, 0.3, 0.5})) end, { 0.655436494881056, -12.389964978163412 }, { 2 } },
    { 'LogisticNormal', function() return D.LogisticNormal(T({{0.1, -0.3}, {2., 0.}}), T({{1., 2.}, {0.5, 0.3}})):log_prob(T({{0.6, 0.3, 0.1}, {0.01, 0.01, 0.98}})) end, { 0.7432314808255205, -177.16525890074618 }, { 2 } },
    { 'LogisticNormal', function() return D.LogisticNormal(0.5, 2.):log_prob(T({0.25, 0.75})) end, { -0.2575544382826871 }, {} },
    { 'KL', function() return D.kl_divergence(D.Binomial(10, T({0.2, 0.7})), D.Binomial(10, T({0.5, 0.6}))) end, { 1.9274475702175742, 0.2160085414354651 }, { 2 } },
    { 'KL', function() return D.kl_divergence(D.Binomial(T({10., 12.}), T({0.2, 0.7})), D.Binomial(10, T({0.5, 0.6}))) end, { 1.9274475702175742, INF }, { 2 } },
    { 'KL', function() return D.kl_divergence(D.Gumbel(T({0.5, -1.}), T({1., 2.})), D.Gumbel(T({0., 3.}), T({2., 0.5}))) end, { 0.34473357163075047, 71534.33704163504 }, { 2 } },
    { 'KL', function() return D.kl_divergence(D.Geometric(T({0.2, 0.9})), D.Geometric(T({0.5, 0.3}))) end, { 0.9637237851087868, 0.8824000498841862 }, { 2 } },
    { 'KL', function() return D.kl_divergence(D.HalfNormal(T({0.2, 3.})), D.HalfNormal(T({1.5, 0.3}))) end, { 1.5237919094311536, 47.19741490700596 }, { 2 } },
    { 'KL', function() return D.kl_divergence(D.Cauchy(T({0.5, -1.}), T({1., 2.})), D.Cauchy(T({0., 3.}), T({2., 0.5}))) end, { 0.14518200984449825, 1.7160476474923587 }, { 2 } },
    { 'KL', function() return D.kl_divergence(D.Pareto(T({1., 2.}), T({3., 1.5})), D.Pareto(T({0.5, 3.}), T({2., 1.}))) end, { 1.4584261358947215, INF }, { 2 } },
    { 'KL', function() return D.kl_divergence(D.OneHotCategoricalStraightThrough(T({0.2, 0.8})), D.OneHotCategorical(T({0.5, 0.5}))) end, { 0.19274475702175747 }, {} },
    { 'KL Bernoulli Poisson', function() return D.kl_divergence(D.Bernoulli(T({0.3, 0.9})), D.Poisson(T({1.5, 0.2}))) end, { 0.7674961655126572, 1.323411147799242 }, { 2 } },
    { 'KL Beta Pareto', function() return D.kl_divergence(D.Beta(T({2., 0.6}), T({3., 1.4})), D.Pareto(T({1.2, 0.5}), T({3.5, 2.5}))) end, { INF, INF }, { 2 } },
    { 'KL Beta Exponential', function() return D.kl_divergence(D.Beta(T({2., 0.6}), T({3., 1.4})), D.Exponential(T({0.7, 2.5}))) end, { 0.8715815937267328, 0.1467821919522112 }, { 2 } },
    { 'KL Beta Gamma', function() return D.kl_divergence(D.Beta(T({2., 0.6}), T({3., 1.4})), D.Gamma(T({2.5, 0.7}), T({1.5, 3.}))) end, { 1.7309267499905086, 0.11589050359285857 }, { 2 } },
    { 'KL Beta Normal', function() return D.kl_divergence(D.Beta(T({2., 0.6}), T({3., 1.4})), D.Normal(T({0.3, -1.2}), T({0.8, 2.5}))) end, { 0.9697641316784633, 2.333902188905194 }, { 2 } },
    { 'KL Beta Uniform', function() return D.kl_divergence(D.Beta(T({2., 0.6}), T({3., 1.4})), D.Uniform(T({0., -0.5}), T({1., 0.9}))) end, { 0.23490664978800035, INF }, { 2 } },
    { 'KL Exponential Beta', function() return D.kl_divergence(D.Exponential(T({0.7, 2.5})), D.Beta(T({2., 0.6}), T({3., 1.4}))) end, { INF, INF }, { 2 } },
    { 'KL Exponential Pareto', function() return D.kl_divergence(D.Exponential(T({0.7, 2.5})), D.Pareto(T({1.2, 0.5}), T({3.5, 2.5}))) end, { INF, INF }, { 2 } },
    { 'KL Exponential Uniform', function() return D.kl_divergence(D.Exponential(T({0.7, 2.5})), D.Uniform(T({0.2, 1.5}), T({0.9, 4.}))) end, { INF, INF }, { 2 } },
    { 'KL Exponential Gamma', function() return D.kl_divergence(D.Exponential(T({0.7, 2.5})), D.Gamma(T({2.5, 0.7}), T({1.5, 3.}))) end, { 0.3880133805651196, 0.16007745730543865 }, { 2 } },
    { 'KL Exponential Gumbel', function() return D.kl_divergence(D.Exponential(T({0.7, 2.5})), D.Gumbel(T({0.4, -1.}), T({1.2, 0.6}))) end, { 0.31991688145042463, 1.852123803144035 }, { 2 } },
    { 'KL Exponential Normal', function() return D.kl_divergence(D.Exponential(T({0.7, 2.5})), D.Normal(T({0.3, -1.2}), T({0.8, 2.5}))) end, { 1.928565191012955, 1.969119996952983 }, { 2 } },
    { 'KL Gamma Pareto', function() return D.kl_divergence(D.Gamma(T({2.5, 0.7}), T({1.5, 3.})), D.Pareto(T({1.2, 0.5}), T({3.5, 2.5}))) end, { INF, INF }, { 2 } },
    { 'KL Gamma Uniform', function() return D.kl_divergence(D.Gamma(T({2.5, 0.7}), T({1.5, 3.})), D.Uniform(T({0.2, 1.5}), T({0.9, 4.}))) end, { INF, INF }, { 2 } },
    { 'KL Gamma Exponential', function() return D.kl_divergence(D.Gamma(T({2.5, 0.7}), T({1.5, 3.})), D.Exponential(T({0.7, 2.5}))) end, { 0.1988588092085093, 0.170794709705002 }, { 2 } },
    { 'KL Gamma Gumbel', function() return D.kl_divergence(D.Gamma(T({2.5, 0.7}), T({1.5, 3.})), D.Gumbel(T({0.4, -1.}), T({1.2, 0.6}))) end, { 0.37582964625635074, 2.1871116480138504 }, { 2 } },
    { 'KL Gamma Normal', function() return D.kl_divergence(D.Gamma(T({2.5, 0.7}), T({1.5, 3.})), D.Normal(T({0.3, -1.2}), T({0.8, 2.5}))) end, { 1.6985691249380168, 2.509559151102429 }, { 2 } },
    { 'KL Gumbel Beta', function() return D.kl_divergence(D.Gumbel(T({0.4, -1.}), T({1.2, 0.6})), D.Beta(T({2., 0.6}), T({3., 1.4}))) end, { INF, INF }, { 2 } },
    { 'KL Gumbel Exponential', function() return D.kl_divergence(D.Gumbel(T({0.4, -1.}), T({1.2, 0.6})), D.Exponential(T({0.7, 2.5}))) end, { INF, INF }, { 2 } },
    { 'KL Gumbel Gamma', function() return D.kl_divergence(D.Gumbel(T({0.4, -1.}), T({1.2, 0.6})), D.Gamma(T({2.5, 0.7}), T({1.5, 3.}))) end, { INF, INF }, { 2 } },
    { 'KL Gumbel Pareto', function() return D.kl_divergence(D.Gumbel(T({0.4, -1.}), T({1.2, 0.6})), D.Pareto(T({1.2, 0.5}), T({3.5, 2.5}))) end, { INF, INF }, { 2 } },
    { 'KL Gumbel Uniform', function() return D.kl_divergence(D.Gumbel(T({0.4, -1.}), T({1.2, 0.6})), D.Uniform(T({0.2, 1.5}), T({0.9, 4.}))) end, { INF, INF }, { 2 } },
    { 'KL Gumbel Normal', function() return D.kl_divergence(D.Gumbel(T({0.4, -1.}), T({1.2, 0.6})), D.Normal(T({0.3, -1.2}), T({0.8, 2.5}))) end, { 1.2776741868519501, 0.8400913900402864 }, { 2 } },
    { 'KL Laplace Beta', function() return D.kl_divergence(D.Laplace(T({0.4, -1.}), T({1.2, 0.6})), D.Beta(T({2., 0.6}), T({3., 1.4}))) end, { INF, INF }, { 2 } },
    { 'KL Laplace Exponential', function() return D.kl_divergence(D.Laplace(T({0.4, -1.}), T({1.2, 0.6})), D.Exponential(T({0.7, 2.5}))) end, { INF, INF }, { 2 } },
    { 'KL Laplace Gamma', function() return D.kl_divergence(D.Laplace(T({0.4, -1.}), T({1.2, 0.6})), D.Gamma(T({2.5, 0.7}), T({1.5, 3.}))) end, { INF, INF }, { 2 } },
    { 'KL Laplace Pareto', function() return D.kl_divergence(D.Laplace(T({0.4, -1.}), T({1.2, 0.6})), D.Pareto(T({1.2, 0.5}), T({3.5, 2.5}))) end, { INF, INF }, { 2 } },
    { 'KL Laplace Uniform', function() return D.kl_divergence(D.Laplace(T({0.4, -1.}), T({1.2, 0.6})), D.Uniform(T({0.2, 1.5}), T({0.9, 4.}))) end, { INF, INF }, { 2 } },
    { 'KL Laplace Normal', function() return D.kl_divergence(D.Laplace(T({0.4, -1.}), T({1.2, 0.6})), D.Normal(T({0.3, -1.2}), T({0.8, 2.5}))) end, { 1.0781387445365627, 0.7137077082848733 }, { 2 } },
    { 'KL Normal Beta', function() return D.kl_divergence(D.Normal(T({0.3, -1.2}), T({0.8, 2.5})), D.Beta(T({2., 0.6}), T({3., 1.4}))) end, { INF, INF }, { 2 } },
    { 'KL Normal Exponential', function() return D.kl_divergence(D.Normal(T({0.3, -1.2}), T({0.8, 2.5})), D.Exponential(T({0.7, 2.5}))) end, { INF, INF }, { 2 } },
    { 'KL Normal Gamma', function() return D.kl_divergence(D.Normal(T({0.3, -1.2}), T({0.8, 2.5})), D.Gamma(T({2.5, 0.7}), T({1.5, 3.}))) end, { INF, INF }, { 2 } },
    { 'KL Normal Pareto', function() return D.kl_divergence(D.Normal(T({0.3, -1.2}), T({0.8, 2.5})), D.Pareto(T({1.2, 0.5}), T({3.5, 2.5}))) end, { INF, INF }, { 2 } },
    { 'KL Normal Uniform', function() return D.kl_divergence(D.Normal(T({0.3, -1.2}), T({0.8, 2.5})), D.Uniform(T({0.2, 1.5}), T({0.9, 4.}))) end, { INF, INF }, { 2 } },
    { 'KL Normal Gumbel', function() return D.kl_divergence(D.Normal(T({0.3, -1.2}), T({0.8, 2.5})), D.Gumbel(T({0.4, -1.}), T({1.2, 0.6}))) end, { 0.26057213452809336, 8213.23255000103 }, { 2 } },
    { 'KL Normal Laplace', function() return D.kl_divergence(D.Normal(T({0.3, -1.2}), T({0.8, 2.5})), D.Laplace(T({0.4, -1.}), T({1.2, 0.6}))) end, { 0.21574704219478846, 1.1822440856545255 }, { 2 } },
    { 'KL Pareto Beta', function() return D.kl_divergence(D.Pareto(T({1.2, 0.5}), T({3.5, 2.5})), D.Beta(T({2., 0.6}), T({3., 1.4}))) end, { INF, INF }, { 2 } },
    { 'KL Pareto Uniform', function() return D.kl_divergence(D.Pareto(T({1.2, 0.5}), T({3.5, 2.5})), D.Uniform(T({0.2, 1.5}), T({0.9, 4.}))) end, { INF, INF }, { 2 } },
    { 'KL Pareto Exponential', function() return D.kl_divergence(D.Pareto(T({1.2, 0.5}), T({3.5, 2.5})), D.Exponential(T({0.7, 2.5}))) end, { 1.3174020699258602, 1.376480513893279 }, { 2 } },
    { 'KL Pareto Gamma', function() return D.kl_divergence(D.Pareto(T({1.2, 0.5}), T({3.5, 2.5})), D.Gamma(T({2.5, 0.7}), T({1.5, 3.}))) end, { 0.8736934624272754, 2.1133324027301064 }, { 2 } },
    { 'KL Pareto Normal', function() return D.kl_divergence(D.Pareto(T({1.2, 0.5}), T({3.5, 2.5})), D.Normal(T({0.3, -1.2}), T({0.8, 2.5}))) end, { 2.38833460787759, 2.4198671775129283 }, { 2 } },
    { 'KL Poisson Bernoulli', function() return D.kl_divergence(D.Poisson(T({1.5, 0.2})), D.Bernoulli(T({0.3, 0.9}))) end, { INF, INF }, { 2 } },
    { 'KL Poisson Binomial', function() return D.kl_divergence(D.Poisson(T({1.5, 0.2})), D.Binomial(5, T({0.3, 0.9}))) end, { INF, INF }, { 2 } },
    { 'KL Uniform Beta', function() return D.kl_divergence(D.Uniform(T({0.2, 1.5}), T({0.9, 4.})), D.Beta(T({2., 0.6}), T({3., 1.4}))) end, { 0.39955335859237495, INF }, { 2 } },
    { 'KL UniformBad Beta', function() return D.kl_divergence(D.Uniform(T({-0.2, 0.5}), T({0.9, 1.5})), D.Beta(T({2., 0.6}), T({3., 1.4}))) end, { INF, INF }, { 2 } },
    { 'KL Uniform Exponential', function() return D.kl_divergence(D.Uniform(T({0.2, 1.5}), T({0.9, 4.})), D.Exponential(T({0.7, 2.5}))) end, { 1.098349887877465, 5.04241853625169 }, { 2 } },
    { 'KL Uniform Gamma', function() return D.kl_divergence(D.Uniform(T({0.2, 1.5}), T({0.9, 4.})), D.Gamma(T({2.5, 0.7}), T({1.5, 3.}))) end, { 1.466131219009577, 7.117985486467912 }, { 2 } },
    { 'KL Uniform Gumbel', function() return D.kl_divergence(D.Uniform(T({0.2, 1.5}), T({0.9, 4.})), D.Gumbel(T({0.4, -1.}), T({1.2, 0.6}))) end, { 1.5590589853016055, 4.826546880549276 }, { 2 } },
    { 'KL Uniform Normal', function() return D.kl_divergence(D.Uniform(T({0.2, 1.5}), T({0.9, 4.})), D.Normal(T({0.3, -1.2}), T({0.8, 2.5}))) end, { 1.1331990924958621, 2.2088051998713394 }, { 2 } },
    { 'KL Uniform Pareto', function() return D.kl_divergence(D.Uniform(T({0.2, 1.5}), T({0.9, 4.})), D.Pareto(T({1.2, 0.5}), T({3.5, 2.5}))) end, { INF, 3.3120581828957953 }, { 2 } },
    { 'KL UniformBad Exponential', function() return D.kl_divergence(D.Uniform(T({-0.2, 0.5}), T({0.9, 1.5})), D.Exponential(T({0.7, 2.5}))) end, { INF, 1.583709268125845 }, { 2 } },
    { 'KL UniformBad Pareto', function() return D.kl_divergence(D.Uniform(T({-0.2, 0.5}), T({0.9, 1.5})), D.Pareto(T({1.2, 0.5}), T({3.5, 2.5}))) end, { INF, 0.6582766030734752 }, { 2 } },
    { 'KL Beta Uniform', function() return D.kl_divergence(D.Beta(T({2., 0.6}), T({3., 1.4})), D.Uniform(T({0., -0.5}), T({1., 0.9}))) end, { 0.23490664978800035, INF }, { 2 } },
    { 'KL Pareto Normal low alpha', function() return D.kl_divergence(D.Pareto(T({1.2, 0.5}), T({1.5, 2.5})), D.Normal(0., 1.)) end, { INF, 1.7533764457531107 }, { 2 } },
    { 'KL Pareto Gamma low alpha', function() return D.kl_divergence(D.Pareto(T({1.2, 0.5}), T({0.5, 2.5})), D.Gamma(2., 1.)) end, { INF, 1.3359184263273791 }, { 2 } },
}

describe("wick.distributions: PyTorch's values (float64)", function()
  it("log_prob, cdf, icdf, entropy, mean, variance, mode and KL of the new distributions", function()
    support.assert_value_cases(cases)
  end)
end)

describe("wick.distributions: Multinomial", function()
  it("sample: counts of shape sample .. batch .. {k}, each row summing to total_count, moments n p", function()
    wick.manual_seed(11)
    local p = T({ { 0.2, 0.3, 0.5 }, { 0.7, 0.2, 0.1 } })
    local m = D.Multinomial(12, p)
    assert.are.same({ 2 }, m.batch_shape)
    assert.are.same({ 3 }, m.event_shape)
    assert.is_false(m.has_rsample)
    local s = m:sample({ N })
    assert.are.same({ N, 2, 3 }, s:size())
    assert.are.equal("float64", s.dtype)
    assert.is_true(all_true(s:sum(-1):eq(12)))
    assert.is_true(all_true(s:ge(0)) and all_true(s:eq(s:floor())))
    mean_near(s:reshape(N, 6), m.mean:reshape(-1):totable(), m.variance:sqrt():reshape(-1):totable())
    assert.are.same({ 4, 5, 2, 3 }, m:sample({ 4, 5 }):size())
    assert.are.same({ 2, 3 }, m:sample():size())
    assert.is_true(all_true(D.Multinomial(0, p):sample({ 3 }):eq(0)))
    -- the values it draws are in its support; log_prob of them is finite
    assert.is_true(all_true(m.support:check(s)))
    assert.is_true(all_true(m:log_prob(s):isfinite()))
    -- by name, with logits; an integer value tensor; expand
    local k = D.Multinomial({ total_count = 4, logits = T({ 0, 1 }) })
    assert.are.equal(4, k.total_count)
    support.assert_close(k:log_prob(wick.tensor({ 1, 3 }, { dtype = "int64" })):item(), k:log_prob(T({ 1, 3 })):item(), 1e-15)
    local e = D.Multinomial(4, T({ 0.2, 0.8 })):expand({ 3 })
    assert.are.same({ 3, 2 }, e:sample():size())
    assert.are.same({ 3 }, e:entropy():size())
  end)

  it("errors: PyTorch's messages", function()
    local p = T({ 0.5, 0.5 })
    assert_error_has(function() D.Multinomial(T(3), p) end, "Multinomial: inhomogeneous total_count is not supported")
    assert_error_has(function() D.Multinomial(1.5, p) end, "inhomogeneous total_count is not supported")
    assert_error_has(function() D.Multinomial(0 / 0, p) end, "inhomogeneous total_count is not supported")
    assert_error_has(function() D.Multinomial(-1, p) end, "total_count", "IntegerGreaterThan(lower_bound=0)")
    assert_error_has(function() D.Multinomial(3) end, "Either `probs` or `logits` must be specified, but not both.")
    assert_error_has(function() D.Multinomial(3, T({ -0.5, 0.5 })) end, "expected parameter probs", "Simplex()")
    assert_error_has(function() D.Multinomial(3, T(0.5)) end, "probs must be at least one-dimensional.")
    assert_error_has(function() D.Multinomial(3, p):log_prob(T({ 1, 1, 1 })) end,
      "The right-most size of value must match event_shape")
    assert_error_has(function() D.Multinomial(3, p):log_prob(T({ 3, 1 })) end,
      "to be within the support (Multinomial()) of the distribution Multinomial")
    assert_error_has(function() D.Multinomial(3, p):log_prob("x") end, "Multinomial:log_prob")
    assert_error_has(function() D.Multinomial(1e15, p):sample() end, "Multinomial:sample", "out of memory")
    assert_error_has(function() local m = D.Multinomial(3, p); return m.sample(3) end,
      "Multinomial:sample: expected a Multinomial as self")
  end)
end)

describe("wick.distributions: OneHotCategoricalStraightThrough", function()
  it("rsample: one-hot draws whose gradient is the probabilities' (straight through), as PyTorch's", function()
    wick.manual_seed(5)
    local w = T({ 1, 2, 3 })
    local p = T({ 0.1, 0.2, 0.7 }):requires_grad_()
    local d = D.OneHotCategoricalStraightThrough(p)
    assert.is_true(d.has_rsample)
    local s = d:rsample({ 4 })
    assert.are.same({ 4, 3 }, s:size())
    assert.is_true(all_true(s:detach():sum(-1):eq(1)))
    ;(s * w):sum():backward()
    support.assert_close(p.grad:totable(), { -6.39999999999999858, -2.39999999999999858, 1.60000000000000142 }, 1e-14)
    local l = T({ 0.1, 0.2, 0.7 }):requires_grad_()
    ;(D.OneHotCategoricalStraightThrough({ logits = l }):rsample({ 4 }) * w):sum():backward()
    support.assert_close(l.grad:totable(), { -1.23172466170687045, -0.23563409901087584, 1.46735876071774607 }, 1e-14)
    -- a OneHotCategorical otherwise: its moments, draws, support and KL
    local big = D.OneHotCategoricalStraightThrough(T({ 0.1, 0.2, 0.7 })):sample({ N })
    mean_near(big, { 0.1, 0.2, 0.7 }, { 0.3, 0.4, 0.458257569495584 })
    assert.are.equal("OneHot()", tostring(d.support))
    assert.are.same({ 3, 3 }, d:enumerate_support():size())
    assert.are.same({ 0, 0, 1 }, d.mode:totable())
    assert_error_has(function() D.OneHotCategoricalStraightThrough(T({ -0.1, 0.2 })) end,
      "OneHotCategoricalStraightThrough: expected parameter probs", "Simplex()")
    assert_error_has(function() return d.rsample(5) end, "OneHotCategoricalStraightThrough:rsample: expected a")
    assert.are.equal(D.OneHotCategoricalStraightThrough, D.one_hot_categorical.OneHotCategoricalStraightThrough)
  end)
end)

describe("wick.distributions: HalfCauchy, InverseGamma, Pareto, Kumaraswamy, FisherSnedecor, LogisticNormal", function()
  it("draws: shapes, support and moments", function()
    wick.manual_seed(7)
    -- HalfCauchy: non-negative, half of them below the scale (its median)
    local hc = D.HalfCauchy(T({ 0.5, 3 }))
    local s = hc:sample({ N })
    assert.are.same({ N, 2 }, s:size())
    assert.is_true(all_true(s:ge(0)))
    mean_near(s:le(T({ 0.5, 3 })):double(), { 0.5, 0.5 }, { 0.5, 0.5 })
    -- InverseGamma(5, 2): mean 1/2, sd sqrt(1/12)
    local ig = D.InverseGamma(T(5), T(2))
    s = ig:sample({ N })
    assert.is_true(all_true(s:gt(0)))
    mean_near(s, 0.5, math.sqrt(1 / 12))
    -- Pareto(1.5, 5): at least the scale, mean 1.875
    local pa = D.Pareto(T({ 1.5 }), T({ 5 }))
    s = pa:rsample({ N })
    assert.are.same({ N, 1 }, s:size())
    assert.is_true(all_true(s:ge(1.5)))
    mean_near(s, 1.875, math.sqrt(pa.variance:item()))
    -- Kumaraswamy(2, 3): in [0, 1], its mean
    local ku = D.Kumaraswamy(T(2), T(3))
    s = ku:sample({ N })
    assert.is_true(all_true(s:ge(0)) and all_true(s:le(1)))
    mean_near(s, ku.mean:item(), math.sqrt(ku.variance:item()))
    -- FisherSnedecor(5, 12): mean 1.2, variance 1.08
    local fs = D.FisherSnedecor(T(5), T(12))
    s = fs:sample({ N })
    assert.is_true(all_true(s:gt(0)))
    mean_near(s, 1.2, math.sqrt(1.08))
    -- LogisticNormal: on the simplex; the stick-breaking inverse of the draws is Normal(loc, scale)
    local ln = D.LogisticNormal(T({ 0.3, -1 }), T({ 1, 0.5 }))
    assert.are.same({}, ln.batch_shape)
    assert.are.same({ 3 }, ln.event_shape)
    s = ln:sample({ N })
    assert.are.same({ N, 3 }, s:size())
    assert.is_true(all_true(s:ge(0)) and all_true((s:sum(-1) - 1):abs():lt(1e-12)))
    mean_near(D.StickBreakingTransform().inv(s), { 0.3, -1 }, { 1, 0.5 })
    assert.are.same({ 4, 2, 3 }, D.LogisticNormal(T({ { 0, 0 }, { 1, 1 } }), T(1)):sample({ 4 }):size())
    assert.are.same({ 5, 2 }, D.LogisticNormal(0, 1):sample({ 5 }):size())
    -- shapes of the others, and expand
    for _, d in ipairs({ D.HalfCauchy(T({ 1, 2 })), D.InverseGamma(T({ 1, 2 }), 3), D.Pareto(T({ 1, 2 }), 3),
      D.Kumaraswamy(T({ 1, 2 }), 3), D.FisherSnedecor(T({ 1, 2 }), 3) }) do
      assert.are.same({ 5, 2 }, d:sample({ 5 }):size())
      assert.are.same({ 2 }, d.batch_shape)
      assert.is_true(d.has_rsample)
      local e = d:expand({ 4, 2 })
      assert.are.same({ 4, 2 }, e:sample():size())
      assert.are.same({ 4, 2 }, e.batch_shape)
    end
    assert.are.equal("float32", D.Pareto(1, 2):sample().dtype)
  end)

  it("rsample's gradients flow to the scales", function()
    local scale = T({ 1.5, 2 }):requires_grad_()
    local s = D.HalfCauchy(scale):rsample({ 3 })
    s:sum():backward()
    support.assert_close(scale.grad:totable(), (s:detach() / scale:detach()):sum(1):totable(), 1e-12)
    local ps = T({ 1.5, 2 }):requires_grad_()
    local x = D.Pareto(ps, T({ 3, 4 })):rsample({ 3 })
    x:sum():backward()
    support.assert_close(ps.grad:totable(), (x:detach() / ps:detach()):sum(1):totable(), 1e-12)
  end)

  it("the gradients of log_prob (+ entropy) to the parameters, as PyTorch's", function()
    local function grads(d, ps, val, ent)
      local l = d:log_prob(val):sum()
      if ent then l = l + d:entropy():sum() end
      l:backward()
      local out = {}
      for i, p in ipairs(ps) do out[i] = p.grad:totable() end
      return out
    end
    local function P(v) return T(v):requires_grad_() end
    local function check(got, want, tol)
      for i = 1, #want do support.assert_close(got[i], want[i], tol) end
    end
    -- (through digamma's derivative, wick's trigamma: 1e-9 of PyTorch's)
    local a, b = P({ 2, 0.5 }), P({ 3, 0.7 })
    check(grads(D.Kumaraswamy(a, b), { a, b }, T({ 0.4, 0.01 }), true),
      { { -0.10889426258876267, -1.615621699754254 }, { 0.07866920185119097, 1.142222980371195 } }, 1e-8)
    a, b = P({ 0.5, 3 }), P({ 2, 0.25 })
    check(grads(D.InverseGamma(a, b), { a, b }, T({ 0.7, 0.01 }), true),
      { { -3.3888711525904167, 1.7163552220419513 }, { -0.6785714285714286, -84.0 } }, 1e-8)
    a, b = P({ 1.5, 0.2 }), P({ 3, 0.5 })
    check(grads(D.Pareto(a, b), { a, b }, T({ 2, 0.3 }), true),
      { { 2.6666666666666665, 7.5 }, { -0.3987931835628919, -4.405465108108165 } }, 1e-12)
    a, b = P({ 5, 1 }), P({ 7, 3 })
    check(grads(D.FisherSnedecor(a, b), { a, b }, T({ 1.3, 0.01 }), false),
      { { 0.05825898184410469, -1.167052470086918 }, { 0.02864630125429886, 0.027031458271083164 } }, 1e-12)
    a = P({ 2, 30 })
    check(grads(D.HalfCauchy(a), { a }, T({ 1.5, 100 }), true), { { 0.36, 0.06116207951070337 } }, 1e-12)
    a, b = P({ 0.1, -0.3 }), P({ 1, 2 })
    check(grads(D.LogisticNormal(a, b), { a, b }, T({ 0.2, 0.3, 0.5 }), false),
      { { -0.7931471805599453, -0.05270640594149771 }, { -0.37091754996980963, -0.4944440695454601 } }, 1e-12)
    a = P({ 0.2, 0.3, 0.5 })
    check(grads(D.Multinomial(10, a), { a }, T({ 4, 3, 3 }), true),
      { { 11.217630120949394, 0.1763965453335956, -4.592889975579919 } }, 1e-12)
  end)

  it("errors: parameters outside their constraints, values outside the support", function()
    assert_error_has(function() D.HalfCauchy(-1) end, "HalfCauchy: expected parameter scale", "GreaterThan(lower_bound=0.0)")
    assert_error_has(function() D.HalfCauchy(1):log_prob(T(-1)) end,
      "HalfCauchy:log_prob: expected value argument", "GreaterThanEq(lower_bound=0.0)")
    assert.are.equal(-INF, D.HalfCauchy(1, { validate_args = false }):log_prob(T(-1)):item())
    assert_error_has(function() D.InverseGamma(1, -2) end, "InverseGamma: expected parameter rate")
    assert_error_has(function() D.InverseGamma(1, 2):log_prob(T(0)) end, "InverseGamma:log_prob", "GreaterThan(lower_bound=0.0)")
    assert_error_has(function() D.Pareto(2, -1) end, "Pareto: expected parameter alpha")
    assert_error_has(function() D.Pareto(2, 1):log_prob(T(1)) end, "Pareto:log_prob", "within the support")
    assert_error_has(function() D.Kumaraswamy(2, 1):log_prob(T(1.5)) end, "Kumaraswamy:log_prob",
      "Interval(lower_bound=0.0, upper_bound=1.0)")
    assert_error_has(function() D.Kumaraswamy(0 / 0, 1) end, "Kumaraswamy", "concentration1")
    assert_error_has(function() D.FisherSnedecor(1, 0) end, "FisherSnedecor: expected parameter df2")
    assert_error_has(function() D.FisherSnedecor(1, 2):log_prob(T(-1)) end, "FisherSnedecor:log_prob")
    assert_error_has(function() D.LogisticNormal(T({ 0, 0 }), T({ 1, -1 })) end, "LogisticNormal: expected parameter scale")
    assert_error_has(function() D.LogisticNormal(T({ 0, 0 }), T({ 1, 1 })):log_prob(T({ 0.5, 0.6, 0.1 })) end,
      "LogisticNormal:log_prob", "Simplex()")
    assert_error_has(function() D.Pareto(1, 2, { validate = true }) end, "unknown option 'validate'")
    assert_error_has(function() D.InverseGamma("a", 2) end, "InverseGamma", "concentration")
  end)

  it("supports, arg_constraints and module names", function()
    assert.are.equal("GreaterThanEq(lower_bound=0.0)", tostring(D.HalfCauchy(1).support))
    assert.are.equal("GreaterThan(lower_bound=0.0)", tostring(D.InverseGamma(1, 1).support))
    assert.are.equal("Interval(lower_bound=0.0, upper_bound=1.0)", tostring(D.Kumaraswamy(1, 1).support))
    assert.are.equal("Simplex()", tostring(D.LogisticNormal(0, 1).support))
    assert.are.equal("Multinomial()", tostring(D.Multinomial(3, T({ 0.5, 0.5 })).support))
    assert.is_true(all_true(D.Pareto(T(2), 1).support:check(T({ 2, 3 }))))
    assert.is_false(D.Pareto(T(2), 1).support:check(T(1.5)):item())
    assert.are.equal("GreaterThan(lower_bound=0.0)", tostring(D.FisherSnedecor.arg_constraints.df1))
    assert.are.equal(D.FisherSnedecor, D.fishersnedecor.FisherSnedecor)
    assert.are.equal(D.HalfCauchy, D.half_cauchy.HalfCauchy)
    assert.are.equal(D.Multinomial, D.multinomial.Multinomial)
    assert.are.equal(D.register_kl, D.kl.register_kl)
  end)
end)

describe("wick.distributions: register_kl and kl_divergence", function()
  it("a registered pair is used, the most specific one first; one's own classes too", function()
    local Mine = D.Normal:extend("MyNormalR55")
    function Mine:init(loc, scale) Mine.super.init(self, loc, scale) end
    local m = Mine(T(0), T(1))
    -- a subclass finds its base's pairs (Normal-Normal, Normal-Gumbel)
    support.assert_close(D.kl_divergence(m, D.Normal(T(1), T(2))):item(),
      D.kl_divergence(D.Normal(T(0), T(1)), D.Normal(T(1), T(2))):item(), 1e-15)
    assert.is_true(D.kl_divergence(m, D.Gumbel(T(0), T(1))):item() > 0)
    -- register_kl returns its function; a more specific pair wins over the base's
    local f = function() return T(42) end
    assert.are.equal(f, D.register_kl(Mine, D.Normal)(f))
    assert.are.equal(42, D.kl_divergence(m, D.Normal(T(1), T(2))):item())
    assert.are.equal(42, D.kl_divergence(m, m):item())
    assert.is_true(D.kl_divergence(D.Normal(T(0), T(1)), m):item() ~= 42)
    -- a pair with Distribution matches any distribution
    assert_error_has(function() D.kl_divergence(D.StudentT(T(3)), D.Cauchy(T(0), T(1))) end,
      "no KL divergence between StudentT and Cauchy")
    D.register_kl(Mine, D.Distribution)(function() return T(7) end)
    assert.are.equal(7, D.kl_divergence(m, D.StudentT(T(3))):item())
    assert.are.equal(42, D.kl_divergence(m, D.Normal(T(0), T(1))):item())
    -- two pairs as specific as each other: p's class decides (PyTorch's left order), with its warning
    local A = D.Gumbel:extend("MyGumbelR55")
    function A:init(loc, scale) A.super.init(self, loc, scale) end
    local g = A(T(0), T(1))
    D.register_kl(A, D.Gumbel)(function() return T(1) end)
    D.register_kl(D.Gumbel, A)(function() return T(2) end)
    assert.are.equal(1, D.kl_divergence(g, g):item())
    assert.are.equal(2, D.kl_divergence(D.Gumbel(T(0), T(1)), g):item())
  end)

  it("errors", function()
    assert_error_has(function() D.register_kl(5, D.Normal) end, "register_kl: Expected type_p to be a Distribution subclass")
    assert_error_has(function() D.register_kl(D.Normal, D.Normal(0, 1)) end, "Expected type_q to be a Distribution subclass")
    assert_error_has(function() D.register_kl(D.Normal, D.Normal)(3) end, "register_kl: expected a function")
    assert_error_has(function() D.kl_divergence(D.Normal(0, 1), D.Bernoulli(0.5)) end,
      "no KL divergence between Normal and Bernoulli", "No KL(p || q) is implemented for p type Normal and q type Bernoulli")
    assert_error_has(function() D.kl_divergence(D.StudentT(1), D.StudentT(1)) end, "no KL divergence for StudentT")
    assert_error_has(function() D.kl_divergence(1, D.Normal(0, 1)) end, "no KL divergence between")
    assert_error_has(function() D.kl_divergence(D.Binomial(3, 0.5), D.Binomial(5, 0.5)) end,
      "KL between Binomials where q.total_count > p.total_count is not implemented")
  end)
end)
