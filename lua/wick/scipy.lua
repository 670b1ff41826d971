-- wick.scipy: the few SciPy calls that PyTorch programs make beside torch, so those lines port
-- as they are. Now scipy.optimize.linear_sum_assignment, the Hungarian matching of every DETR
-- family's loss (`from scipy.optimize import linear_sum_assignment`).
local wick = require("wick")
local check = require("wick.argcheck")

local optimize = {}

-- A shortest augmenting path from free row `i` over the columns (Crouse, "On implementing 2D
-- rectangular assignment algorithms", 2016: SciPy's algorithm, so ties resolve as SciPy's do).
-- Returns the sink column (nil: no path, the matrix is infeasible) and the path's length.
local function augmenting_path(nc, cost, u, v, path, row4col, spc, i, SR, SC)
  local remaining, num_remaining = {}, nc
  for it = 1, nc do remaining[it] = nc - it + 1 end
  for r in pairs(SR) do SR[r] = nil end
  for c = 1, nc do SC[c], spc[c] = false, math.huge end
  local min_val, sink = 0, nil
  while not sink do
    local index, lowest = nil, math.huge
    SR[i] = true
    local row = cost[i]
    for it = 1, num_remaining do
      local j = remaining[it]
      local r = min_val + row[j] - u[i] - v[j]
      if r < spc[j] then path[j], spc[j] = i, r end
      -- among equal lowest costs, one that gives a new sink (integer costs with small coefficients)
      if spc[j] < lowest or (spc[j] == lowest and row4col[j] == nil) then lowest, index = spc[j], it end
    end
    min_val = lowest
    if min_val == math.huge then return nil end
    local j = remaining[index]
    if row4col[j] == nil then sink = j else i = row4col[j] end
    SC[j] = true
    remaining[index] = remaining[num_remaining]
    num_remaining = num_remaining - 1
  end
  return sink, min_val
end

-- the rows of a cost matrix (a 2-D tensor or a nested table) as Lua arrays, transposed when it
-- has more rows than columns
local function rows_of(fn, cost_matrix, maximize)
  local m = cost_matrix
  if not wick.is_tensor(m) then
    if type(m) ~= "table" then check.expected(fn, "cost_matrix", "a 2-D tensor or a table of rows", m) end
    m = wick.tensor(m, { dtype = "float64" })
  end
  if m:dim() ~= 2 then check.fail(fn, "expected a matrix (2-D array), got a %d-D array", m:dim()) end
  if m.dtype == "bool" or m:is_complex() then check.fail(fn, "expected a real-valued cost matrix, got %s", m.dtype) end
  local nr, nc = m:size(1), m:size(2)
  local transpose = nc < nr
  local t = (transpose and m:t() or m):to({ dtype = "float64", device = "cpu" }):contiguous()
  local rows = t:totable()
  if maximize then
    for _, row in ipairs(rows) do for j = 1, #row do row[j] = -row[j] end end
  end
  for _, row in ipairs(rows) do
    for j = 1, #row do
      local c = row[j]
      if c ~= c or c == -math.huge then check.fail(fn, "matrix contains invalid numeric entries") end
    end
  end
  return rows, transpose, nr, nc
end

--- wick.scipy.optimize.linear_sum_assignment(cost_matrix[, maximize = false]) (or {maximize =}):
--- SciPy's: the rows and columns of an assignment of least total cost (greatest with maximize),
--- as two int64 tensors of 1-based indices, the rows ascending; min(rows, columns) pairs. An
--- infinite cost is a forbidden pair ("cost matrix is infeasible" when no assignment avoids
--- them); NaN and -inf are SciPy's "invalid numeric entries".
function optimize.linear_sum_assignment(cost_matrix, maximize)
  local fn = "linear_sum_assignment"
  if type(maximize) == "table" and getmetatable(maximize) == nil then
    maximize = check.options(maximize, fn, { maximize = "boolean" }).maximize
  end
  if maximize ~= nil and type(maximize) ~= "boolean" then check.expected(fn, "maximize", "a boolean", maximize) end
  local cost, transpose = rows_of(fn, cost_matrix, maximize)
  local nr, nc = #cost, cost[1] and #cost[1] or 0
  local rows, cols = {}, {}
  if nr > 0 and nc > 0 then
    local u, v, spc, path, col4row, row4col, SR, SC = {}, {}, {}, {}, {}, {}, {}, {}
    for i = 1, nr do u[i] = 0 end
    for j = 1, nc do v[j] = 0 end
    for cur = 1, nr do
      local sink, min_val = augmenting_path(nc, cost, u, v, path, row4col, spc, cur, SR, SC)
      if not sink then check.fail(fn, "cost matrix is infeasible") end
      -- the dual variables
      u[cur] = u[cur] + min_val
      for i in pairs(SR) do
        if i ~= cur then u[i] = u[i] + min_val - spc[col4row[i]] end
      end
      for j = 1, nc do
        if SC[j] then v[j] = v[j] - (min_val - spc[j]) end
      end
      -- the assignment along the path
      local j = sink
      while true do
        local i = path[j]
        row4col[j] = i
        col4row[i], j = j, col4row[i]
        if i == cur then break end
      end
    end
    if transpose then -- the original rows (the columns here) in ascending order
      local order = {}
      for i = 1, nr do order[i] = i end
      table.sort(order, function(a, b) return col4row[a] < col4row[b] end)
      for k, i in ipairs(order) do rows[k], cols[k] = col4row[i], i end
    else
      for i = 1, nr do rows[i], cols[i] = i, col4row[i] end
    end
  end
  return wick.tensor(rows, { dtype = "int64" }), wick.tensor(cols, { dtype = "int64" })
end

return check.strict({ optimize = check.strict(optimize, "wick.scipy.optimize") }, "wick.scipy")
