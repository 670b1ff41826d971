-- Memory at a glance: wick.memory_stats / wick.memory_summary (the CPU
-- allocator) and wick.cuda.memory_stats / wick.cuda.memory_summary, with the
-- keys and the text layout of PyTorch's torch.cuda.memory_stats / memory_summary.
-- The counting is the core's (wick_get_memory_stats, src/core/alloc.c).
return function(wick)
  local core = wick._core
  local M = {}

  --- wick.memory_stats(): a table keyed like torch.cuda.memory_stats()
  function M.memory_stats()
    local m = core.memory_stats()
    return {
      ["allocated_bytes.all.current"] = m.allocated_bytes,
      ["allocated_bytes.all.peak"] = m.allocated_bytes_peak,
      ["allocated_bytes.all.allocated"] = m.allocated_bytes_total,
      ["allocated_bytes.all.freed"] = m.freed_bytes_total,
      ["allocation.all.current"] = m.allocations,
      ["allocation.all.allocated"] = m.allocations_total,
      ["allocation.all.freed"] = m.frees_total,
      ["reserved_bytes.all.current"] = m.reserved_bytes,
      ["cached_bytes.all.current"] = m.cached_bytes,
      ["cached_blocks.all.current"] = m.cached_blocks,
      ["num_alloc_retries"] = m.num_alloc_retries,
      ["num_ooms"] = m.num_ooms,
    }
  end

  --- wick.cuda.memory_stats([device]): the CUDA caching allocator's counts
  --- ({} without CUDA, like PyTorch before CUDA is initialized)
  function M.cuda_memory_stats(device)
    if not wick.cuda.is_available() then return {} end
    local alloc, peak, reserved = wick.cuda.memory_allocated(device), wick.cuda.max_memory_allocated(device),
      wick.cuda.memory_reserved(device)
    return {
      ["allocated_bytes.all.current"] = alloc,
      ["allocated_bytes.all.peak"] = peak,
      ["reserved_bytes.all.current"] = reserved,
    }
  end

  -- PyTorch's _format_size: the unit moves up while the size is 768 units or more
  local function format_size(n)
    if n == nil then return "" end
    local units, u, pref = { "B  ", "KiB", "MiB", "GiB", "TiB", "PiB" }, 1, n
    while u < #units and pref >= 768 * 1024 do n, pref, u = math.floor(n / 1024), pref / 1024, u + 1 end
    return ("%6d %s"):format(n, units[u])
  end

  local function format_count(n)
    if n == nil then return "" end
    return ("%7d   "):format(n)
  end

  local WIDTH = 75
  local function rule(c) return "|" .. c:rep(WIDTH) .. "|" end
  local function centered(text)
    local pad = WIDTH - #text
    local left = math.floor(pad / 2)
    return "|" .. (" "):rep(left) .. text .. (" "):rep(pad - left) .. "|"
  end
  local function row(name, cur, peak, total, freed)
    local cells = { cur, peak, total, freed }
    local s = ("| %-21s |"):format(name)
    for _, c in ipairs(cells) do s = s .. (" %-10s |"):format(c) end
    return s
  end

  local function summary(title, stats, retries_name)
    local lines = {
      rule("="),
      centered(title),
      rule("-"),
      ("|%s|%s|"):format(("%-36s"):format(("            OOMs: %d"):format(stats["num_ooms"] or 0)),
        ("%-38s"):format(("        %s: %d"):format(retries_name, stats["num_alloc_retries"] or 0))),
      rule("="),
      row("Metric", "Cur Usage", "Peak Usage", "Tot Alloc", "Tot Freed"),
      rule("-"),
      row("Allocated memory", format_size(stats["allocated_bytes.all.current"]),
        format_size(stats["allocated_bytes.all.peak"]), format_size(stats["allocated_bytes.all.allocated"]),
        format_size(stats["allocated_bytes.all.freed"])),
      rule("-"),
      row("Allocations", format_count(stats["allocation.all.current"]), "",
        format_count(stats["allocation.all.allocated"]), format_count(stats["allocation.all.freed"])),
      rule("-"),
      row("Reserved memory", format_size(stats["reserved_bytes.all.current"]), "", "", ""),
      rule("-"),
      row("Cached free blocks", format_size(stats["cached_bytes.all.current"]), "", "", ""),
      rule("="),
    }
    return table.concat(lines, "\n") .. "\n"
  end

  --- wick.memory_summary(): PyTorch-like text of wick.memory_stats()
  function M.memory_summary()
    return summary("wick CPU memory summary", M.memory_stats(), "alloc retries")
  end

  --- wick.cuda.memory_summary([device])
  function M.cuda_memory_summary(device)
    if not wick.cuda.is_available() then
      return summary("wick CUDA memory summary (no CUDA device)", {}, "cudaMalloc retries")
    end
    local index = device
    if index == nil then index = wick.cuda.current_device() end
    if type(index) ~= "number" then index = wick.device(index).index or wick.cuda.current_device() end
    return summary(("wick CUDA memory summary, device ID %d"):format(index), M.cuda_memory_stats(device),
      "cudaMalloc retries")
  end

  function M.reset_peak_memory_stats() core.reset_peak_memory_stats() end

  return M
end
