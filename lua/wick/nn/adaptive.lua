-- nn.AdaptiveLogSoftmaxWithLoss: PyTorch's adaptive softmax (Grave et al.), the frequent classes
-- in a head with one entry per tail cluster, each cluster a smaller projection. Classes are 1-based
-- here; cutoffs are counts of classes, the same numbers as PyTorch's.
local wick = require("wick")
local check = require("wick.argcheck")
local Module = require("wick.nn.module")
local layers = require("wick.nn.layers")
local F = require("wick.nn.functional")

local ASM = Module:extend("AdaptiveLogSoftmaxWithLoss")

--- nn.AdaptiveLogSoftmaxWithLoss(in_features, n_classes, cutoffs[, div_value = 4[, head_bias = false]])
--- (or by name): head Linear(in_features, cutoffs[1] + clusters), tail[i] Sequential(Linear(in_features,
--- floor(in_features / div_value^i)), Linear(that, cluster size)), both without bias
function ASM:init(in_features, n_classes, cutoffs, div_value, head_bias)
  local fn = "AdaptiveLogSoftmaxWithLoss"
  check.int(in_features, fn, "in_features", 1)
  check.int(n_classes, fn, "n_classes", 2)
  if type(cutoffs) ~= "table" or #cutoffs == 0 then
    check.fail(fn, "cutoffs should be a sequence of length larger than 0")
  end
  local list = {}
  for i, c in ipairs(cutoffs) do
    if type(c) ~= "number" or c ~= math.floor(c) or c < 1 or c > n_classes - 1 or (i > 1 and c <= list[i - 1]) then
      check.fail(fn, "cutoffs should be a sequence of unique, positive integers sorted in an increasing order, where each "
        .. "value is between 1 and n_classes-1")
    end
    list[i] = c
  end
  div_value = check.opt_number(div_value, fn, "div_value", 4)
  self.in_features, self.n_classes, self.div_value = in_features, n_classes, div_value
  self.head_bias = head_bias == true
  list[#list + 1] = n_classes
  self.cutoffs = list
  self.shortlist_size = list[1]
  self.n_clusters = #list - 1
  self.head_size = self.shortlist_size + self.n_clusters
  self.head = layers.Linear(in_features, self.head_size, { bias = self.head_bias })
  self.tail = layers.ModuleList()
  for i = 1, self.n_clusters do
    local hsz = math.floor(in_features / div_value ^ i)
    self.tail:append(layers.Sequential(layers.Linear(in_features, hsz, { bias = false }),
      layers.Linear(hsz, list[i + 1] - list[i], { bias = false })))
  end
end

function ASM:reset_parameters()
  self.head:reset_parameters()
  for _, projection in ipairs(self.tail:children()) do
    for _, lin in ipairs(projection:children()) do lin:reset_parameters() end
  end
end

-- input (and target) with a batch dim, and whether they had one
local function batched(fn, input, target)
  check.tensor(input, fn, "input")
  if target == nil then
    if input:dim() ~= 1 and input:dim() ~= 2 then check.fail(fn, "expected a 1-D or 2-D input, got %d-D", input:dim()) end
    return input:dim() == 2, input:dim() == 2 and input or input:unsqueeze(1)
  end
  check.tensor(target, fn, "target")
  if target:dim() == 1 then
    if input:dim() ~= 2 then check.fail(fn, "1D target tensor expects 2D input tensors, but found inputs with size %s", tostring(input.shape)) end
    if input:size(1) ~= target:size(1) then check.fail(fn, "Input and target should have the same size in the batch dimension.") end
    return true, input, target
  elseif target:dim() == 0 then
    if input:dim() ~= 1 then check.fail(fn, "0D target tensor expects 1D input tensors, but found inputs with size %s", tostring(input.shape)) end
    return false, input:unsqueeze(1), target:unsqueeze(1)
  end
  check.fail(fn, "0D or 1D target tensor expected, multi-target not supported")
end

--- asm(input, target) -> output, loss: each row's log-probability of its 1-based target class and the
--- mean negative of them (PyTorch's _ASMoutput: the output answers .output and .loss too)
function ASM:forward(input_, target_)
  local fn = "AdaptiveLogSoftmaxWithLoss"
  local is_batched, input, target = batched(fn, input_, target_)
  if target.dtype ~= "int64" and target.dtype ~= "int32" then
    check.fail(fn, "expected 1-based class indices of dtype int64, got %s", target.dtype)
  end
  target = target:to("int64")
  local n = target:size(1)
  local output = input:new_zeros(n)
  local gather = wick.zeros(n, { dtype = "int64", device = target.device })
  local used, low = 0, 0
  for i = 1, #self.cutoffs do
    local high = self.cutoffs[i]
    local mask = target:gt(low):logical_and(target:le(high))
    local rows = mask:nonzero():view(-1)
    if rows:numel() > 0 then
      if i == 1 then
        gather:index_copy_(1, rows, target[mask])
      else
        local relative = target[mask] - low
        local cluster = F.log_softmax(self.tail[i - 1](input:index_select(1, rows)), 2)
        gather:index_fill_(1, rows, self.shortlist_size + i - 1)
        output = output:index_copy(1, rows, cluster:gather(2, relative:unsqueeze(2)):squeeze(2))
      end
      used = used + rows:numel()
    end
    low = high
  end
  if used ~= n then
    check.fail(fn, "Target values should be in [1, %d], but values in range [%d, %d] were found. ", self.n_classes,
      target:min():item(), target:max():item())
  end
  local head = F.log_softmax(self.head(input), 2)
  output = output + head:gather(2, gather:unsqueeze(2)):squeeze(2)
  local loss = (-output):mean()
  if not is_batched then output = output:squeeze(1) end
  return output, loss
end
ASM.forward = wick._name_results(ASM.forward, { "output", "loss" })

-- every class's log-probability (rows, n_classes) from the head's output
function ASM:_get_full_log_prob(input, head_output)
  local head = F.log_softmax(head_output, 2)
  local parts = { head:narrow(2, 1, self.shortlist_size) }
  for i = 1, self.n_clusters do
    local cluster = F.log_softmax(self.tail[i](input), 2)
    parts[#parts + 1] = cluster + head:narrow(2, self.shortlist_size + i, 1)
  end
  return wick.cat(parts, 2)
end

--- asm:log_prob(input): the log-probabilities of all n_classes, (rows, n_classes) or (n_classes)
function ASM:log_prob(input)
  local is_batched, x = batched("AdaptiveLogSoftmaxWithLoss.log_prob", input)
  local out = self:_get_full_log_prob(x, self.head(x))
  return is_batched and out or out:squeeze(1)
end

--- asm:predict(input): the most likely 1-based class of each row (the head's, unless a cluster wins)
function ASM:predict(input)
  local is_batched, x = batched("AdaptiveLogSoftmaxWithLoss.predict", input)
  local head_output = self.head(x)
  local out = head_output:argmax(2)
  local outside = out:gt(self.shortlist_size)
  if outside:any() then
    if outside:all() then
      out = self:_get_full_log_prob(x, head_output):argmax(2)
    else
      out[outside] = self:_get_full_log_prob(x[outside], head_output[outside]):argmax(2)
    end
  end
  return is_batched and out or out:squeeze(1)
end

return ASM
