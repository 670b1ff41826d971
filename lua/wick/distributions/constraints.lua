-- wick.distributions.constraints: torch.distributions.constraints, the sets a distribution's
-- parameters and values live in. Each constraint has check(value) (a bool tensor, over the batch
-- when the constraint has event dims; as c:check(v) or, PyTorch's spelling, c.check(v)),
-- is_discrete and event_dim, and prints as PyTorch's (Real(), GreaterThan(lower_bound=0.0)).
-- Distributions name theirs in d.support and d.arg_constraints; a distribution class of one's own
-- sets them the same way (My.arg_constraints = {loc = constraints.real}).
local wick = require("wick")
local check = require("wick.argcheck")

local C = {}
local Constraint = { __name = "Constraint" }
Constraint.__index = Constraint
Constraint.__tostring = function(c) return c._repr end

-- a number as Python prints a float bound (0.0, 1.5), a tensor as its values
local function bound(v)
  if type(v) ~= "number" then return tostring(v) end
  local text = check.shortest(v)
  if v == math.floor(v) and not text:find("[e.n]") then text = text .. ".0" end
  return text
end

-- a constraint named repr whose test of a value is test(v)
local function make(repr, test, opts)
  local c = setmetatable({ _repr = repr, is_discrete = opts and opts.discrete or false,
    event_dim = opts and opts.event_dim or 0 }, Constraint)
  -- (bound to c: c.check(v) and c:check(v) both test v)
  c.check = function(a, b)
    local v = rawequal(a, c) and b or a
    check.tensor(v, repr .. ".check", "value")
    return test(v)
  end
  return c
end

local function is_integer(v) return v:eq(v:floor()) end

--- constraints.real, real_vector, positive, nonnegative, unit_interval, boolean, nonnegative_integer,
--- positive_integer, simplex, one_hot, lower_triangular, lower_cholesky, corr_cholesky, positive_definite; and the
--- constructors greater_than(lb), greater_than_eq(lb), less_than(ub), interval(lo, hi),
--- half_open_interval(lo, hi), integer_interval(lo, hi), independent(c, n), and dependent (whose
--- check is an error, as PyTorch's)
C.real = make("Real()", function(v) return v:eq(v) end)
function C.greater_than(lb) return make(("GreaterThan(lower_bound=%s)"):format(bound(lb)), function(v) return v:gt(lb) end) end
function C.greater_than_eq(lb)
  return make(("GreaterThanEq(lower_bound=%s)"):format(bound(lb)), function(v) return v:ge(lb) end)
end
function C.less_than(ub) return make(("LessThan(upper_bound=%s)"):format(bound(ub)), function(v) return v:lt(ub) end) end
function C.interval(lo, hi)
  return make(("Interval(lower_bound=%s, upper_bound=%s)"):format(bound(lo), bound(hi)),
    function(v) return v:ge(lo):logical_and(v:le(hi)) end)
end
function C.half_open_interval(lo, hi)
  return make(("HalfOpenInterval(lower_bound=%s, upper_bound=%s)"):format(bound(lo), bound(hi)),
    function(v) return v:ge(lo):logical_and(v:lt(hi)) end)
end
function C.integer_interval(lo, hi)
  return make(("IntegerInterval(lower_bound=%s, upper_bound=%s)"):format(tostring(lo), tostring(hi)),
    function(v) return is_integer(v):logical_and(v:ge(lo)):logical_and(v:le(hi)) end, { discrete = true })
end
local function integer_greater_than(lb)
  return make(("IntegerGreaterThan(lower_bound=%d)"):format(lb), function(v) return is_integer(v):logical_and(v:ge(lb)) end,
    { discrete = true })
end
C.positive = C.greater_than(0.0)
C.nonnegative = C.greater_than_eq(0.0)
C.unit_interval = C.interval(0.0, 1.0)
C.boolean = make("Boolean()", function(v) return v:eq(0):logical_or(v:eq(1)) end, { discrete = true })
C.nonnegative_integer = integer_greater_than(0)
C.positive_integer = integer_greater_than(1)
function C.independent(base, n)
  check.int(n, "constraints.independent", "reinterpreted_batch_ndims", 0)
  local c = make(("IndependentConstraint(%s, %d)"):format(tostring(base), n), function(v)
    local ok = base.check(v)
    for _ = 1, n do ok = ok:all(-1) end
    return ok
  end, { discrete = base.is_discrete, event_dim = base.event_dim + n })
  c.base_constraint, c.reinterpreted_batch_ndims = base, n
  return c
end
C.real_vector = C.independent(C.real, 1)
C.simplex = make("Simplex()", function(v)
  return v:ge(0):all(-1):logical_and((v:sum(-1) - 1):abs():lt(1e-6))
end, { event_dim = 1 })
C.one_hot = make("OneHot()", function(v)
  return v:eq(0):logical_or(v:eq(1)):all(-1):logical_and(v:sum(-1):eq(1))
end, { discrete = true, event_dim = 1 })
C.lower_triangular = make("LowerTriangular()", function(v) return v:tril():eq(v):all(-1):all(-1) end, { event_dim = 2 })
C.lower_cholesky = make("LowerCholesky()", function(v)
  return v:tril():eq(v):all(-1):all(-1):logical_and(v:diagonal(0, -2, -1):gt(0):all(-1))
end, { event_dim = 2 })
-- lower Cholesky factors of correlation matrices: rows of unit length (to eps * n * 10, PyTorch's tolerance)
C.corr_cholesky = make("CorrCholesky()", function(v)
  local tol = wick.finfo(v.dtype).eps * v:size(-1) * 10
  local unit_rows = (v:detach():pow(2):sum(-1):sqrt() - 1):abs():le(tol):all(-1)
  return C.lower_cholesky.check(v):logical_and(unit_rows)
end, { event_dim = 2 })
C.positive_definite = make("PositiveDefinite()", function(v)
  local symmetric = (v - v:transpose(-2, -1)):abs():le(1e-6):all(-1):all(-1)
  local _, info = wick.linalg.cholesky_ex(v)
  return symmetric:logical_and(info:eq(0))
end, { event_dim = 2 })
C.dependent = make("Dependent()", function()
  check.fail("constraints.dependent", "Cannot determine validity of dependent constraint")
end)
--- constraints.is_dependent(c): whether c is the dependent constraint
function C.is_dependent(c) return rawequal(c, C.dependent) end
C.Constraint = Constraint

return check.strict(C, "wick.distributions.constraints")
