-- A small stand-in for Python's argparse, for the ports of pytorch/examples
-- scripts (examples/word_language_model.lua, dcgan.lua, resnet.lua), so that
-- their option lists read like the originals:
--   local argparse = dofile("examples/argparse.lua")
--   local parser = argparse.ArgumentParser("prog.lua", "what it does")
--   parser:add_argument("--lr", { type = "float", default = 20, help = "initial learning rate" })
--   parser:add_argument("--tied", { action = "store_true", help = "tie the weights" })
--   parser:add_argument("--profile", { nargs = "?", const = "profile.json", metavar = "PATH", help = "..." })
--   local args = parser:parse_args(arg)        -- args.lr, args.tied; --log-interval -> args.log_interval
-- Options come as "--name value" or "--name=value"; type is "int", "float" or
-- "string" (the default); required = true makes an option mandatory; nargs =
-- "?" makes the value optional (the option alone gives `const`, absent it is
-- `default`), as in Python. --help
-- prints the options and exits 0; a bad command line prints the error and the
-- usage to stderr and exits 2, as argparse does.
local argparse = {}

local Parser = {}
Parser.__index = Parser

function argparse.ArgumentParser(prog, description)
  return setmetatable({ prog = prog, description = description, options = {}, by_flag = {} }, Parser)
end

function Parser:add_argument(flag, spec)
  spec = spec or {}
  local o = { flag = flag, dest = flag:gsub("^%-%-", ""):gsub("-", "_"), type = spec.type or "string",
    default = spec.default, help = spec.help or "", action = spec.action, required = spec.required,
    nargs = spec.nargs, const = spec.const, metavar = spec.metavar }
  if o.action == "store_true" and o.default == nil then o.default = false end
  self.options[#self.options + 1] = o
  self.by_flag[flag] = o
end

function Parser:usage()
  local lines = { ("usage: build/wick examples/%s [options]"):format(self.prog) }
  if self.description then lines[#lines + 1] = self.description end
  for _, o in ipairs(self.options) do
    local value = o.action == "store_true" and "" or (" " .. (o.metavar or o.type:upper()))
    if o.nargs == "?" then value = " [" .. value:sub(2) .. "]" end
    local default = (o.default ~= nil and o.action ~= "store_true") and (" (default %s)"):format(tostring(o.default)) or ""
    lines[#lines + 1] = ("  %-22s %s%s"):format(o.flag .. value, o.help, default)
  end
  return table.concat(lines, "\n")
end

function Parser:error(message)
  io.stderr:write(self.prog, ": error: ", message, "\n", self:usage(), "\n")
  os.exit(2)
end

local CONVERT = {
  int = function(v) local n = tonumber(v); return n and n == math.floor(n) and n or nil end,
  float = tonumber,
  string = function(v) return v end,
}

function Parser:parse_args(argv)
  local args, seen = {}, {}
  for _, o in ipairs(self.options) do args[o.dest] = o.default end
  local i = 1
  while argv and argv[i] do
    local a = argv[i]
    if a == "--help" or a == "-h" then
      print(self:usage())
      os.exit(0)
    end
    local flag, value = a:match("^(%-%-[^=]+)=(.*)$")
    flag = flag or a
    local o = self.by_flag[flag]
    if not o then self:error("unrecognized argument " .. a) end
    if o.action == "store_true" then
      if value then self:error("argument " .. flag .. ": ignored explicit argument '" .. value .. "'") end
      args[o.dest] = true
    else
      if not value and o.nargs == "?" and (argv[i + 1] == nil or argv[i + 1]:match("^%-%-")) then
        value = o.const
      elseif not value then
        i = i + 1
        value = argv[i]
      end
      if value == nil then self:error("argument " .. flag .. ": expected one argument") end
      local v = CONVERT[o.type](value)
      if v == nil then self:error(("argument %s: invalid %s value: '%s'"):format(flag, o.type, value)) end
      args[o.dest] = v
    end
    seen[o] = true
    i = i + 1
  end
  for _, o in ipairs(self.options) do
    if o.required and not seen[o] then self:error("the following arguments are required: " .. o.flag) end
  end
  return args
end

return argparse
