-- wick.utils._pytree: PyTorch's torch.utils._pytree, the nested containers that
-- functions pass around (lucidrains' `tree_flatten(out)` of `(out, values), cache`;
-- wick.func's arguments). A node is a plain table (Python's list, tuple and dict), an
-- OrderedDict, a list such as model:parameters() gives, or a wick.namedtuple; anything else
-- (a tensor, a number, a string, a module, a Size) is a leaf. A table's children come in a
-- fixed order: its array part, then its other keys sorted (Python keeps a dict's insertion
-- order, which a Lua table does not have); an OrderedDict's in its own order.
local wick = require("wick")
local check = require("wick.argcheck")
local ordered = require("wick.ordered")

local unpack = table.unpack or unpack -- luacheck: ignore
local M = {}

-- the kind of node v is, or nil for a leaf
local function node_kind(v)
  if type(v) ~= "table" or wick.is_tensor(v) then return nil end
  local mt = getmetatable(v)
  if mt == nil then return "table" end
  if mt == check.list_mt then return "list" end
  if ordered.is(v) then return "OrderedDict" end
  if rawget(mt, "__namedtuple") then return "namedtuple" end
  return nil
end

-- a node's keys, in the order of its children
local function keys_of(v, kind)
  if kind == "OrderedDict" then return ordered.names(v) end
  local keys, n = {}, 0
  if kind == "namedtuple" then
    for i = 1, #getmetatable(v).__namedtuple._fields do keys[i] = i end
    return keys
  end
  while rawget(v, n + 1) ~= nil do n = n + 1; keys[n] = n end
  local named = {}
  for k in pairs(v) do
    if type(k) ~= "number" or k < 1 or k > n or k % 1 ~= 0 then named[#named + 1] = k end
  end
  table.sort(named, function(a, b) return tostring(a) < tostring(b) end)
  for _, k in ipairs(named) do keys[#keys + 1] = k end
  return keys
end

-- ---- tree specs ----

local TreeSpec = { __name = "TreeSpec" }
TreeSpec.__index = TreeSpec
local LEAF = setmetatable({ num_leaves = 1, num_nodes = 1, num_children = 0, children_specs = {} }, TreeSpec)
-- Python's None (a Lua nil: a namedtuple's field, a table's hole) is a node without children
local NONE = setmetatable({ type = "None", context = {}, num_leaves = 0, num_nodes = 1, num_children = 0,
  children_specs = {} }, TreeSpec)
M.LeafSpec = function() return LEAF end

function TreeSpec.is_leaf(spec) return rawequal(spec, LEAF) end
TreeSpec.__tostring = function(spec)
  if rawequal(spec, LEAF) then return "*" end
  local keys, children = {}, {}
  for i, k in ipairs(spec.context) do
    keys[i] = type(k) == "string" and ("'" .. k .. "'") or tostring(k)
    children[i] = tostring(spec.children_specs[i])
  end
  return ("TreeSpec(%s, [%s], [%s])"):format(spec.type, table.concat(keys, ", "), table.concat(children, ", "))
end
TreeSpec.__eq = function(a, b)
  if rawequal(a, LEAF) or rawequal(b, LEAF) then return rawequal(a, b) end
  if a.type ~= b.type or a.class ~= b.class or #a.context ~= #b.context then return false end
  for i, k in ipairs(a.context) do
    if b.context[i] ~= k or a.children_specs[i] ~= b.children_specs[i] then return false end
  end
  return true
end

-- is_leaf: the caller's predicate (PyTorch's is_leaf=), which may stop the descent at a node
local function flatten(v, leaves, is_leaf)
  if v == nil then return NONE end
  local kind = node_kind(v)
  if kind == nil or (is_leaf and is_leaf(v)) then
    leaves[#leaves + 1] = v
    return LEAF
  end
  local keys, children, n_leaves, n_nodes = keys_of(v, kind), {}, 0, 1
  for i, k in ipairs(keys) do
    local c = flatten(v[k], leaves, is_leaf)
    children[i], n_leaves, n_nodes = c, n_leaves + c.num_leaves, n_nodes + c.num_nodes
  end
  local class = kind == "namedtuple" and getmetatable(v).__namedtuple or nil
  return setmetatable({ type = kind, context = keys, children_specs = children, class = class,
    num_leaves = n_leaves, num_nodes = n_nodes, num_children = #keys }, TreeSpec)
end

-- the node of spec's kind whose children are values (by spec's keys)
local function build(spec, values)
  if spec.type == "namedtuple" then return spec.class(unpack(values, 1, #spec.context)) end
  local out = {}
  for i, k in ipairs(spec.context) do out[k] = values[i] end
  if spec.type == "OrderedDict" then return ordered.of(out, spec.context) end
  if spec.type == "list" then return check.list(out) end
  return out
end

local function unflatten(spec, leaves, at)
  if rawequal(spec, LEAF) then return leaves[at], at + 1 end
  if rawequal(spec, NONE) then return nil, at end
  local values = {}
  for i, c in ipairs(spec.children_specs) do values[i], at = unflatten(c, leaves, at) end
  return build(spec, values), at
end

-- tree's subtrees at spec's leaves (tree has spec's structure down to them)
local function flatten_up_to(spec, tree, out, fn)
  if rawequal(spec, LEAF) then out.n = out.n + 1; out[out.n] = tree; return out end
  local kind = tree == nil and "None" or node_kind(tree)
  if kind ~= spec.type then
    check.fail(fn, "Node type mismatch; expected %s, but got %s.", spec.type, kind or type(tree))
  end
  if kind == "None" then return out end
  local keys = keys_of(tree, kind)
  if #keys ~= #spec.context then
    check.fail(fn, "Node arity mismatch; expected %d, but got %d.", #spec.context, #keys)
  end
  for i, k in ipairs(spec.context) do
    if keys[i] ~= k then check.fail(fn, "Node keys mismatch; expected key %s, but got %s.", tostring(k), tostring(keys[i])) end
    flatten_up_to(spec.children_specs[i], tree[k], out, fn)
  end
  return out
end

--- spec:flatten_up_to(tree): tree's subtrees at spec's leaves
function TreeSpec.flatten_up_to(spec, tree) return flatten_up_to(spec, tree, { n = 0 }, "flatten_up_to") end
--- spec:unflatten(leaves): tree_unflatten(leaves, spec)
function TreeSpec.unflatten(spec, leaves) return M.tree_unflatten(leaves, spec) end

local function is_leaf_of(fn, opt)
  if opt == nil then return nil end
  if type(opt) == "table" and getmetatable(opt) == nil then opt = opt.is_leaf end
  if opt ~= nil and type(opt) ~= "function" then check.expected(fn, "is_leaf", "a function", opt) end
  return opt
end

--- tree_flatten(tree[, is_leaf]) -> leaves, spec (is_leaf a function or {is_leaf = f})
function M.tree_flatten(tree, is_leaf)
  local leaves = {}
  local spec = flatten(tree, leaves, is_leaf_of("tree_flatten", is_leaf))
  return leaves, spec
end
--- tree_leaves(tree[, is_leaf]): the leaves, in order
function M.tree_leaves(tree, is_leaf) return (M.tree_flatten(tree, is_leaf)) end
--- tree_structure(tree[, is_leaf]): the spec
function M.tree_structure(tree, is_leaf) return select(2, M.tree_flatten(tree, is_leaf)) end

--- tree_unflatten(leaves, spec): the tree of spec's structure holding leaves
function M.tree_unflatten(leaves, spec)
  check.table(leaves, "tree_unflatten", "leaves")
  if getmetatable(spec) ~= TreeSpec then check.expected("tree_unflatten", "treespec", "a TreeSpec", spec) end
  local n = #leaves
  if n ~= spec.num_leaves then
    check.fail("tree_unflatten", "treespec.unflatten(leaves): `leaves` has length %d but the spec refers to a pytree "
      .. "that holds %d items (%s).", n, spec.num_leaves, tostring(spec))
  end
  return (unflatten(spec, leaves, 1))
end

-- the trailing {is_leaf = f} of tree_map, told from a tree (a table whose only key is is_leaf)
local function split_options(n, ...)
  if n == 0 then return 0, nil end
  local last = select(n, ...)
  if type(last) == "table" and getmetatable(last) == nil and type(last.is_leaf) == "function"
      and next(last, next(last)) == nil then
    return n - 1, last.is_leaf
  end
  return n, nil
end

--- tree_is_leaf(tree[, is_leaf]): whether tree is a leaf (not a node; nil, Python's None, is a node)
function M.tree_is_leaf(tree, is_leaf)
  is_leaf = is_leaf_of("tree_is_leaf", is_leaf)
  return tree ~= nil and (node_kind(tree) == nil or (is_leaf ~= nil and is_leaf(tree) and true or false))
end

--- tree_map(fn, tree, ...rests[, {is_leaf = f}]): tree's structure with fn(leaf, leaves of rests...) at each
--- leaf; each rest has tree's structure down to tree's leaves
function M.tree_map(fn, tree, ...)
  check.callable(fn, "tree_map", "func")
  local n, is_leaf = split_options(select("#", ...), ...)
  local leaves, spec = M.tree_flatten(tree, is_leaf)
  local rests = {}
  for r = 1, n do rests[r] = flatten_up_to(spec, (select(r, ...)), { n = 0 }, "tree_map") end
  local out = {}
  for i, x in ipairs(leaves) do
    local args = { x }
    for r = 1, n do args[r + 1] = rests[r][i] end
    out[i] = fn(unpack(args, 1, n + 1))
  end
  return (unflatten(spec, out, 1))
end

-- does v pass the type test of tree_map_only (a wick class, a Lua type name, wick.Tensor, or an array of them)
local function of_type(types, v)
  if type(types) == "string" then return type(v) == types or (types == "tensor" and wick.is_tensor(v)) end
  if type(types) == "table" and getmetatable(types) == nil then
    for _, t in ipairs(types) do if of_type(t, v) then return true end end
    return false
  end
  return wick.isinstance(v, types)
end

--- tree_map_only(types, fn, tree): fn on the leaves of types (wick.Tensor, a class, a Lua type name, or an array
--- of them), the others kept
function M.tree_map_only(types, fn, tree)
  check.callable(fn, "tree_map_only", "func")
  return M.tree_map(function(x) if of_type(types, x) then return fn(x) end return x end, tree)
end

--- tree_all(pred, tree), tree_any(pred, tree): whether pred holds for every / some leaf
function M.tree_all(pred, tree)
  check.callable(pred, "tree_all", "pred")
  for _, x in ipairs(M.tree_leaves(tree)) do if not pred(x) then return false end end
  return true
end
function M.tree_any(pred, tree)
  check.callable(pred, "tree_any", "pred")
  for _, x in ipairs(M.tree_leaves(tree)) do if pred(x) then return true end end
  return false
end

M.TreeSpec = TreeSpec
return check.strict(M, "wick.utils._pytree")
