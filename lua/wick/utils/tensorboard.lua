-- wick.utils.tensorboard: PyTorch's torch.utils.tensorboard.SummaryWriter.
--
-- Writes TensorBoard event files: TFRecords (core.tb_record: length, masked
-- CRC-32C, data, masked CRC-32C) holding protobuf Event messages. The
-- messages are composed here from a few field encoders (the one protobuf
-- encoder of wick); the bytes that Lua cannot make portably (varints, IEEE
-- doubles and floats, CRCs, PNG) come from the binding (src/lua/tensorboard_lua.c).
-- Field numbers are those of TensorFlow's event.proto, summary.proto,
-- tensor.proto and TensorBoard's hparams plugin protos.
local wick = require("wick")
local check = require("wick.argcheck")
local core = wick._core
local grid = require("wick.utils.grid")
local unpack = table.unpack or unpack -- Lua 5.2+ (WICK_LUA54) and LuaJIT

local tb = {}

-- ---- protobuf: fields by wire type ----
local varint, pb_double, pb_float = core.pb_varint, core.pb_double, core.pb_float

local function f_varint(field, n) return varint(field * 8) .. varint(n) end
local function f_double(field, x) return varint(field * 8 + 1) .. pb_double(x) end
local function f_float(field, x) return varint(field * 8 + 5) .. pb_float(x) end
local function f_bytes(field, s) return varint(field * 8 + 2) .. varint(#s) .. s end
-- proto3 leaves out fields at their default (0, "")
local function o_varint(field, n) return (n ~= nil and n ~= 0) and f_varint(field, n) or "" end
local function o_bytes(field, s) return (s ~= nil and s ~= "") and f_bytes(field, s) or "" end
tb._pb = { varint = f_varint, double = f_double, float = f_float, bytes = f_bytes }

-- Event: wall_time = 1 (double), step = 2 (int64), file_version = 3, summary = 5
local function event(wall_time, step, body)
  return f_double(1, wall_time) .. o_varint(2, step) .. body
end
tb._event = event
-- Summary.Value: tag = 1, simple_value = 2, image = 4, histo = 5, tensor = 8, metadata = 9
-- (fields in number order, as protobuf writes them)
local function summary_value(tag, fields) return f_bytes(1, f_bytes(1, tag) .. fields) end
-- SummaryMetadata.plugin_data = 1 {plugin_name = 1, content = 2}
local function plugin_metadata(name, content)
  return f_bytes(9, f_bytes(1, f_bytes(1, name) .. o_bytes(2, content)))
end

-- ---- the summaries, as PyTorch's torch/utils/tensorboard/summary.py makes them ----

local function scalar_summary(tag, value) return summary_value(tag, f_float(2, value)) end

-- add_scalar's new_style: a TensorProto {dtype = 1 (DT_FLOAT = 1, DT_DOUBLE = 2),
-- float_val = 5 | double_val = 6 (packed)} with the plugin "scalars"
local function scalar_tensor_summary(tag, value, double)
  local tensor = double and f_varint(1, 2) .. f_bytes(6, pb_double(value)) or f_varint(1, 1) .. f_bytes(5, pb_float(value))
  return summary_value(tag, f_bytes(8, tensor) .. plugin_metadata("scalars", ""))
end

-- TensorFlow's default histogram buckets: +-1e-12 * 1.1^k up to 1e20, and 0
local tf_edges
local function tensorflow_edges()
  if tf_edges then return tf_edges end
  local pos, v = {}, 1e-12
  while v < 1e20 do
    pos[#pos + 1] = v
    v = v * 1.1
  end
  tf_edges = {}
  for i = #pos, 1, -1 do tf_edges[#tf_edges + 1] = -pos[i] end
  tf_edges[#tf_edges + 1] = 0
  for i = 1, #pos do tf_edges[#tf_edges + 1] = pos[i] end
  return tf_edges
end

-- numpy.histogram's edges for `bins` equal buckets over [lo, hi]
local function even_edges(lo, hi, bins)
  if lo == hi then lo, hi = lo - 0.5, hi + 0.5 end
  local e = {}
  for i = 0, bins do e[i + 1] = lo + (hi - lo) * i / bins end
  e[bins + 1] = hi
  return e
end

-- HistogramProto: min = 1, max = 2, num = 3, sum = 4, sum_squares = 5,
-- bucket_limit = 6, bucket = 7 (packed doubles). Like PyTorch's
-- make_histogram: only the span from the first to the last non-empty bucket,
-- with one empty bucket on the left so the leftmost edge shows.
local function histogram_proto(values, bins, fn)
  local n = values:numel()
  if n == 0 then check.fail(fn, "the tensor has no element") end
  local v = values:detach():to("cpu"):to("float64"):contiguous():view(n)
  local edges
  if bins == "tensorflow" then
    edges = tensorflow_edges()
  else
    local lo, hi = v:min():item(), v:max():item()
    if lo ~= lo or hi ~= hi or lo == -math.huge or hi == math.huge then
      check.fail(fn, "with bins = %d the values must be finite", bins)
    end
    edges = even_edges(lo, hi, bins)
  end
  local counts, lo, hi, sum, sq = core.tb_histogram(v, edges)
  local first, last = nil, nil -- 1-based, the first and last non-empty bucket
  for i = 1, #counts do
    if counts[i] > 0 then
      first = first or i
      last = i
    end
  end
  if not first then check.fail(fn, "the histogram is empty: no value is finite") end
  local bucket, limit = {}, {}
  if first == 1 then bucket[1] = 0 end
  for i = math.max(first - 1, 1), last do bucket[#bucket + 1] = counts[i] end
  for i = first, last + 1 do limit[#limit + 1] = edges[i] end
  return f_double(1, lo) .. f_double(2, hi) .. f_double(3, n) .. f_double(4, sum) .. f_double(5, sq)
    .. f_bytes(6, core.pb_doubles(limit)) .. f_bytes(7, core.pb_doubles(bucket))
end

-- dataformats: a permutation of "HW", "CHW" or "NCHW", in any case, like
-- PyTorch's convert_to_HWC; returns the canonical letters and, for each, its
-- dimension in the tensor
local CANONICAL = { [2] = "HW", [3] = "CHW", [4] = "NCHW" }
local function parse_dataformats(df, fn)
  local up = type(df) == "string" and df:upper() or ""
  local canon, where = CANONICAL[#up], {}
  for i = 1, canon and #canon or 0 do
    where[i] = up:find(canon:sub(i, i), 1, true)
    if not where[i] then canon = nil; break end
  end
  if not canon then
    check.fail(fn, "dataformats must be an order of the letters HW, CHW or NCHW (like 'CHW', 'HWC', 'NHWC'), got %s",
      type(df) == "string" and ("'" .. df .. "'") or check.describe(df))
  end
  return canon, where
end

-- An image tensor in dataformats as an (H, W, C) uint8 CPU tensor, N images
-- laid out in a grid of 8 columns like PyTorch's add_images; floats are
-- scaled by 255 and clipped, like PyTorch's image(). The size is checked
-- before anything is copied: a huge (or expanded) tensor is an error, not an
-- allocation.
local function image_hwc(t, dataformats, fn)
  local canon, where = parse_dataformats(dataformats, fn)
  if t:dim() ~= #canon then
    check.fail(fn, "expected a %d-D tensor for dataformats '%s', got %d-D", #canon, dataformats, t:dim())
  end
  local size = {} -- N, C, H, W
  for i, letter in ipairs({ "N", "C", "H", "W" }) do
    local k = canon:find(letter, 1, true)
    size[i] = k and t.shape[where[k]] or 1
  end
  local n, c, h, w = size[1], size[2], size[3], size[4]
  if c ~= 1 and c ~= 3 and c ~= 4 then check.fail(fn, "expected 1, 3 or 4 channels, got %d", c) end
  if n * h * w == 0 then check.fail(fn, "the image is empty (%d image(s) of %dx%d)", n, h, w) end
  local _, _, height, width = grid.layout(n, h, w, 8, 0)
  if height * width * c > grid.MAX_ELEMENTS then
    check.fail(fn, "an image of %dx%dx%d is too large (more than %g bytes)", height, width, c, grid.MAX_ELEMENTS)
  end
  t = t:detach():to("cpu")
  local order = {} -- the tensor's dimensions in N, C, H, W order
  for i = 1, #canon do order[i] = where[i] end
  t = t:permute(unpack(order))
  if #canon == 2 then t = t:unsqueeze(1) end
  if t.dtype ~= "uint8" then
    if not t:is_floating_point() then t = t:to("float32") end
    t = (t:to("float32") * 255):clamp(0, 255):to("uint8")
  end
  if #canon == 4 then t = grid.place(t, 8, 0, 0) end
  return t:permute(2, 3, 1):contiguous(), c
end

-- Summary.Image: height = 1, width = 2, colorspace = 3, encoded_image_string = 4
local function image_summary(tag, hwc, channels)
  local img = f_varint(1, hwc.shape[1]) .. f_varint(2, hwc.shape[2]) .. f_varint(3, channels)
    .. f_bytes(4, core.png_encode(hwc))
  return summary_value(tag, f_bytes(4, img))
end

-- TensorProto: dtype = 1 (DT_STRING = 7), tensor_shape = 2 {dim = 2 {size = 1}},
-- string_val = 8; plugin "text" (TextPluginData version 0: no bytes)
local function text_summary(tag, text)
  local tensor = f_varint(1, 7) .. f_bytes(2, f_bytes(2, f_varint(1, 1))) .. f_bytes(8, text)
  return summary_value(tag .. "/text_summary", f_bytes(8, tensor) .. plugin_metadata("text", ""))
end

-- The hparams plugin (tensorboard/plugins/hparams/api.proto, plugin_data.proto):
-- HParamsPluginData {version = 1, experiment = 2, session_start_info = 3,
-- session_end_info = 4}, each a Summary.Value with no data but the metadata.
local HP_STRING, HP_BOOL, HP_FLOAT64 = 1, 2, 3
local HP_KIND = { number = HP_FLOAT64, string = HP_STRING, boolean = HP_BOOL }

-- google.protobuf.Value: number_value = 2, string_value = 3, bool_value = 4
local function pb_value(v)
  if type(v) == "number" then return f_double(2, v) end
  if type(v) == "string" then return f_bytes(3, v) end
  return f_varint(4, v and 1 or 0)
end

-- hparam_domain_discrete[k]: a list of the values hparam k can take, each
-- of its kind (numbers for a tensor), as the ListValue {values = 1} of its
-- HParamInfo.domain_discrete = 5
local function domain_of(domains, k, kind, fn)
  local d = domains[k]
  if d == nil then return "" end
  local ok = type(d) == "table" and not check.is_tensor(d) and next(d) ~= nil
  local list = {}
  if ok then
    for i, v in pairs(d) do
      if type(i) ~= "number" or i ~= math.floor(i) or i < 1 or i > #d or HP_KIND[type(v)] ~= kind then ok = false end
    end
    for i = 1, #d do list[i] = f_bytes(1, pb_value(d[i])) end
  end
  if not ok then
    local want = kind == HP_FLOAT64 and "numbers" or kind == HP_STRING and "strings" or "booleans"
    check.fail(fn, "hparam_domain_discrete['%s'] must be a non-empty list of %s, like hparam_dict['%s']", k, want, k)
  end
  return f_bytes(5, table.concat(list))
end

local function hparams_summaries(hparams, metrics, domains, fn)
  for k in pairs(domains) do
    if type(k) ~= "string" or hparams[k] == nil then
      check.fail(fn, "hparam_domain_discrete has %s, which is not a key of hparam_dict",
        type(k) == "string" and ("'" .. k .. "'") or check.describe(k))
    end
  end
  local names = {}
  for k in pairs(hparams) do
    if type(k) ~= "string" then check.fail(fn, "hparam names must be strings, got %s", check.describe(k)) end
    names[#names + 1] = k
  end
  table.sort(names)
  local infos, entries = {}, {}
  for _, k in ipairs(names) do
    local v = hparams[k]
    if check.is_tensor(v) then
      if v:numel() ~= 1 then check.fail(fn, "hparam '%s' is a tensor of %d elements, expected 1", k, v:numel()) end
      v = v:item()
    end
    local kind = HP_KIND[type(v)]
    if not kind then
      check.fail(fn, "hparam '%s' must be a number, string, boolean or one-element tensor, got %s", k, check.describe(v))
    end
    -- HParamInfo: name = 1, type = 4, domain_discrete = 5; map entry: key = 1, value = 2
    infos[#infos + 1] = f_bytes(4, f_bytes(1, k) .. f_varint(4, kind) .. domain_of(domains, k, kind, fn))
    entries[#entries + 1] = f_bytes(1, f_bytes(1, k) .. f_bytes(2, pb_value(v)))
  end
  local metric_names = {}
  for k, v in pairs(metrics) do
    if type(k) ~= "string" then check.fail(fn, "metric names must be strings, got %s", check.describe(k)) end
    if check.is_tensor(v) then v = v:item() end
    if type(v) ~= "number" then check.fail(fn, "metric '%s' must be a number, got %s", k, check.describe(v)) end
    metric_names[#metric_names + 1] = k
  end
  table.sort(metric_names)
  for _, k in ipairs(metric_names) do
    infos[#infos + 1] = f_bytes(5, f_bytes(1, f_bytes(2, k))) -- MetricInfo.name = 1 {MetricName.tag = 2}
  end
  local function hp(tag, content) return summary_value(tag, plugin_metadata("hparams", content)) end
  return {
    hp("_hparams_/experiment", f_bytes(2, table.concat(infos))),
    hp("_hparams_/session_start_info", f_bytes(3, table.concat(entries))),
    hp("_hparams_/session_end_info", f_bytes(4, f_varint(1, 1))), -- status = STATUS_SUCCESS
  }, metric_names
end

tb._image_hwc = image_hwc
tb._summary = { scalar = scalar_summary, scalar_tensor = scalar_tensor_summary, text = text_summary, histogram = histogram_proto, image = image_summary,
  hparams = hparams_summaries }

-- ---- the event file writer: one file, records queued and written in batches ----

local uid = 0
local FileWriter = {}
FileWriter.__index = FileWriter

-- a new event file in log_dir (made if missing), its file_version record
-- written; or nil and why not
-- a path as messages show it: control bytes as \<code>, a very long one
-- shortened in the middle
local function shown(path)
  path = path:gsub("%c", function(c) return "\\" .. c:byte() end)
  return #path <= 160 and path or path:sub(1, 100) .. "..." .. path:sub(-40)
end

local function try_file_writer(log_dir, opts)
  local ok, err = core.mkdir_p(log_dir)
  if not ok then return nil, ("cannot use log_dir '%s': %s"):format(shown(log_dir), shown(err)) end
  local host, pid = core.tb_host()
  local now = core.tb_walltime()
  uid = uid + 1
  local path = ("%s/events.out.tfevents.%010d.%s.%d.%d%s"):format(log_dir, math.floor(now), host, pid, uid,
    opts.filename_suffix or "")
  local ok2, ferr = core.tb_write(path, core.tb_record(event(now, 0, f_bytes(3, "brain.Event:2"))), true)
  if not ok2 then return nil, ("cannot write in log_dir '%s': %s"):format(shown(log_dir), shown(ferr)) end
  return setmetatable({ path = path, queue = {}, last_flush = now, max_queue = opts.max_queue or 10,
    flush_secs = opts.flush_secs or 120 }, FileWriter)
end

-- the writer's own folder: an error at the user's line when it cannot be used
local function open_file_writer(log_dir, opts, fn)
  local w, err = try_file_writer(log_dir, opts)
  if not w then check.fail(fn, "%s", err) end
  return w
end

-- a folder made during training (add_scalars' subfolders, add_hparams' runs):
-- like a failed write, a warning and no records, and the training goes on
local function later_writer(log_dir, opts)
  local w, err = try_file_writer(log_dir, opts)
  if w then return w end
  w = setmetatable({ path = log_dir, queue = {} }, FileWriter)
  w:fail(err)
  return w
end

-- Records are appended by core.tb_write (open, write, close: each flush, so no
-- file stays open). A failed write (disk full, I/O error) warns once and
-- drops this file's later records: the training goes on.
function FileWriter:fail(err)
  if not self.failed then
    self.failed = true
    wick._warn(("SummaryWriter: writing '%s' failed (%s); its later records are dropped"):format(shown(self.path),
      tostring(err)))
  end
  self.queue = {}
end

function FileWriter:flush()
  if self.failed or self.closed then return end
  local q = self.queue
  self.queue = {}
  self.last_flush = core.tb_walltime()
  if #q == 0 then return end
  local ok, err = core.tb_write(self.path, table.concat(q))
  if not ok then self:fail(err) end
end

function FileWriter:add_event(ev)
  if self.failed then return end
  local q = self.queue
  q[#q + 1] = core.tb_record(ev)
  if #q >= self.max_queue or core.tb_walltime() - self.last_flush >= self.flush_secs then self:flush() end
end

function FileWriter:add_summary(summary, step, walltime)
  self:add_event(event(walltime or core.tb_walltime(), step or 0, f_bytes(5, summary)))
end

function FileWriter:close()
  self:flush()
  self.closed = true
end

-- ---- SummaryWriter ----

-- a class, wick.Object's (Tacotron2's class Tacotron2Logger(SummaryWriter) is
-- SummaryWriter:extend("Tacotron2Logger"), its init calling Tacotron2Logger.super.init(self, logdir));
-- its methods are set raw (they parse their own arguments, so no keyword binding wraps them)
local SummaryWriter = require("wick.object"):extend("SummaryWriter")
local methods = setmetatable({}, { __newindex = function(_, k, v) rawset(SummaryWriter, k, v) end,
  __index = SummaryWriter })
-- a method PyTorch's writer has and this one lacks (add_graph,
-- add_embedding, add_pr_curve, ...) is an error that names it, not a call of nil
local class_mt = getmetatable(SummaryWriter)
local base_index = class_mt.__index
class_mt.__index = function(_, key)
  if type(key) == "string" and key:find("^add_") then
    local have = {}
    for name in pairs(SummaryWriter) do
      if type(name) == "string" and name:find("^add_") then have[#have + 1] = name end
    end
    table.sort(have)
    error(("SummaryWriter:%s is not implemented in wick (it has %s)"):format(key, table.concat(have, ", ")), 2)
  end
  return base_index[key]
end
tb.SummaryWriter_class = SummaryWriter

-- the writer's file writers, closed by the collector when the writer is
local new_sentinel = newproxy and function(fn)
  local p = newproxy(true)
  getmetatable(p).__gc = fn
  return p
end or function(fn) return setmetatable({}, { __gc = fn }) end

--- SummaryWriter([log_dir[, {comment, max_queue = 10, flush_secs = 120, filename_suffix}]])
--- log_dir defaults to runs/<date>_<host><comment>, like PyTorch.
tb.SummaryWriter = SummaryWriter
function methods.init(self, ...)
  local fn = "SummaryWriter"
  local a = check.positional(fn, { "log_dir", "comment", "purge_step", "max_queue", "flush_secs", "filename_suffix" },
    { log_dir = "string", comment = "string", purge_step = "integer", max_queue = "integer", flush_secs = "number",
      filename_suffix = "string" }, ...)
  if a.purge_step ~= nil then check.fail(fn, "purge_step is not supported") end
  local log_dir = a.log_dir
  if log_dir == nil then
    local host = core.tb_host()
    log_dir = "runs/" .. os.date("%b%d_%H-%M-%S") .. "_" .. host .. (a.comment or "")
  end
  if log_dir == "" then check.fail(fn, "log_dir must not be empty") end
  if a.max_queue ~= nil and a.max_queue < 1 then check.fail(fn, "max_queue must be at least 1, got %d", a.max_queue) end
  if a.flush_secs ~= nil and not (a.flush_secs >= 0) then check.fail(fn, "flush_secs must be >= 0") end
  local opts = { max_queue = a.max_queue, flush_secs = a.flush_secs, filename_suffix = a.filename_suffix }
  local writers = { [""] = open_file_writer(log_dir, opts, fn) }
  self.log_dir, self._opts, self._writers = log_dir, opts, writers
  self._gc = new_sentinel(function()
    for _, w in pairs(writers) do pcall(w.close, w) end
  end)
end

function methods:get_logdir() return self.log_dir end

-- A closed writer opens new files on its next add, as PyTorch's
-- _get_file_writer recreates a closed one (the tutorial closes and goes on)
local function reopen(self)
  if not self._closed then return end
  for k in pairs(self._writers) do self._writers[k] = nil end
  self._closed = false
end
local function writer_of(self, fn, sub)
  reopen(self)
  local w = self._writers[sub or ""]
  if w == nil then
    w = later_writer(sub and self.log_dir .. "/" .. sub or self.log_dir, self._opts)
    self._writers[sub or ""] = w
  end
  return w
end

local function check_common(fn, tag, step, walltime)
  check.string(tag, fn, "tag")
  if step ~= nil then check.int(step, fn, "global_step") end
  if walltime ~= nil then check.number(walltime, fn, "walltime") end
end

-- The arguments after a method's first two, PyTorch's positional-or-keyword
-- ones: in the order of `names`, or in a trailing options table. Their kinds
-- are checked by the method (check_common), so the messages name arguments.
local function later_args(fn, names)
  local spec = {}
  for _, k in ipairs(names) do spec[k] = "any" end
  return function(...) return check.positional(fn, names, spec, ...) end
end

-- a number, or a one-element tensor's value; NaN and infinities are kept
local function scalar_of(v, fn, arg)
  if check.is_tensor(v) then
    if v:numel() ~= 1 then check.fail(fn, "expected a one-element tensor for '%s', got %d elements", arg, v:numel()) end
    return v:item()
  end
  if type(v) ~= "number" then check.expected(fn, arg, "a number or a one-element tensor", v) end
  return v
end

local function flag(v, fn, arg)
  if v ~= nil and type(v) ~= "boolean" then check.expected(fn, arg, "a boolean", v) end
  return v == true
end

local scalar_args = later_args("add_scalar", { "global_step", "walltime", "new_style", "double_precision" })
--- add_scalar(tag, scalar_value[, global_step[, walltime[, new_style = false[, double_precision = false]]]])
--- (or the options in a trailing table)
function methods:add_scalar(tag, value, ...)
  local fn = "add_scalar"
  local a = scalar_args(...)
  check_common(fn, tag, a.global_step, a.walltime)
  value = scalar_of(value, fn, "scalar_value")
  local new_style, double = flag(a.new_style, fn, "new_style"), flag(a.double_precision, fn, "double_precision")
  local summary = new_style and scalar_tensor_summary(tag, value, double) or scalar_summary(tag, value)
  writer_of(self, fn):add_summary(summary, a.global_step, a.walltime)
end

local scalars_args = later_args("add_scalars", { "global_step", "walltime" })
--- add_scalars(main_tag, {tag = value, ...}[, global_step[, walltime]]): each
--- tag in its own writer, log_dir/<main_tag>_<tag>, the summary tagged main_tag
function methods:add_scalars(main_tag, values, ...)
  local fn = "add_scalars"
  local a = scalars_args(...)
  local step, walltime = a.global_step, a.walltime
  check_common(fn, main_tag, step, walltime)
  check.table(values, fn, "tag_scalar_dict")
  local tags = {}
  for k, v in pairs(values) do
    if type(k) ~= "string" then check.fail(fn, "tags must be strings, got %s", check.describe(k)) end
    scalar_of(v, fn, k)
    tags[#tags + 1] = k
  end
  table.sort(tags)
  walltime = walltime or core.tb_walltime()
  for _, k in ipairs(tags) do
    local w = writer_of(self, fn, main_tag:gsub("/", "_") .. "_" .. k)
    w:add_summary(scalar_summary(main_tag, scalar_of(values[k], fn, k)), step, walltime)
  end
end

local histogram_args = later_args("add_histogram", { "global_step", "bins", "walltime" })
--- add_histogram(tag, values[, global_step[, bins = "tensorflow" | n[, walltime]]])
function methods:add_histogram(tag, values, ...)
  local fn = "add_histogram"
  local a = histogram_args(...)
  check_common(fn, tag, a.global_step, a.walltime)
  check.tensor(values, fn, "values")
  local bins = a.bins == nil and "tensorflow" or a.bins
  if bins ~= "tensorflow" then
    if type(bins) ~= "number" or bins ~= math.floor(bins) or bins < 1 or bins > 1e6 then
      check.fail(fn, "bins must be 'tensorflow' or a number of buckets in [1, 1e6], got %s", check.describe(bins))
    end
  end
  local histo = histogram_proto(values, bins, fn)
  writer_of(self, fn):add_summary(summary_value(tag, f_bytes(5, histo)), a.global_step, a.walltime)
end

local function add_image(self, fn, args, default_format, tag, img, ...)
  local a = args(...)
  check_common(fn, tag, a.global_step, a.walltime)
  check.tensor(img, fn, "img_tensor")
  local hwc, c = image_hwc(img, a.dataformats or default_format, fn)
  writer_of(self, fn):add_summary(image_summary(tag, hwc, c), a.global_step, a.walltime)
end

local image_args = later_args("add_image", { "global_step", "walltime", "dataformats" })
--- add_image(tag, img_tensor[, global_step[, walltime[, dataformats = "CHW"]]])
function methods:add_image(...) add_image(self, "add_image", image_args, "CHW", ...) end

local images_args = later_args("add_images", { "global_step", "walltime", "dataformats" })
--- add_images(tag, img_tensor[, global_step[, walltime[, dataformats = "NCHW"]]]):
--- the N images as one, 8 a row (PyTorch's tensorboard make_grid)
function methods:add_images(...) add_image(self, "add_images", images_args, "NCHW", ...) end

local text_args = later_args("add_text", { "global_step", "walltime" })
--- add_text(tag, text_string[, global_step[, walltime]])
function methods:add_text(tag, text, ...)
  local fn = "add_text"
  local a = text_args(...)
  check_common(fn, tag, a.global_step, a.walltime)
  check.string(text, fn, "text_string")
  writer_of(self, fn):add_summary(text_summary(tag, text), a.global_step, a.walltime)
end

local hparams_args = later_args("add_hparams", { "hparam_domain_discrete", "run_name", "global_step" })
--- add_hparams(hparam_dict, metric_dict[, hparam_domain_discrete[, run_name[, global_step]]])
--- (or {hparam_domain_discrete, run_name, global_step}): like PyTorch, in a
--- new run log_dir/<run_name or the time>, with each metric also written as a
--- scalar there
function methods:add_hparams(hparams, metrics, ...)
  local fn = "add_hparams"
  check.table(hparams, fn, "hparam_dict")
  check.table(metrics, fn, "metric_dict")
  local a = hparams_args(...)
  if a.hparam_domain_discrete ~= nil then check.table(a.hparam_domain_discrete, fn, "hparam_domain_discrete") end
  if a.run_name ~= nil then check.string(a.run_name, fn, "run_name") end
  if a.global_step ~= nil then check.int(a.global_step, fn, "global_step") end
  if a.run_name == "" then check.fail(fn, "run_name must not be empty") end
  reopen(self)
  local summaries, metric_names = hparams_summaries(hparams, metrics, a.hparam_domain_discrete or {}, fn)
  local run = a.run_name or ("%.6f"):format(core.tb_walltime())
  local w = later_writer(self.log_dir .. "/" .. run, self._opts)
  local step = a.global_step
  for _, s in ipairs(summaries) do w:add_summary(s, step) end
  for _, k in ipairs(metric_names) do w:add_summary(scalar_summary(k, scalar_of(metrics[k], fn, k)), step) end
  w:close()
end

--- flush(): writes every queued record of every file
function methods:flush()
  for _, w in pairs(self._writers) do w:flush() end
end

--- close(): flushes and closes the files; a later add opens new ones, as PyTorch's
function methods:close()
  for _, w in pairs(self._writers) do w:close() end
  self._closed = true
end

SummaryWriter.__tostring = function(self) return ("SummaryWriter(log_dir='%s')"):format(self.log_dir) end

check.receivers(SummaryWriter, "SummaryWriter")

return tb
