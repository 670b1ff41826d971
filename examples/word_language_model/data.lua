-- pytorch/examples word_language_model/data.py, ported line by line: a
-- Dictionary of the words seen, and a Corpus of train/valid/test.txt turned into
-- one int64 tensor of word ids each (one "<eos>" after every line).
--   local data = dofile("examples/word_language_model/data.lua")
--   local corpus = data.Corpus(dir)            -- dir/train.txt, valid.txt, test.txt
-- Word ids are 1-based (wick's class-index rule: they are targets of the loss).
-- data.prepare(dir[, files]) is not in data.py: it writes train/valid/test.txt
-- into dir from text files this machine has (by default Debian's
-- /usr/share/common-licenses, in sorted order), 8 lines of 10 to train, then one
-- to valid and one to test, so that the example runs without a download.
local wick = require("wick")

local data = {}

local Dictionary = {}
Dictionary.__index = Dictionary
data.Dictionary = Dictionary

function Dictionary.new()
  return setmetatable({ word2idx = {}, idx2word = {} }, Dictionary)
end

function Dictionary:add_word(word)
  if not self.word2idx[word] then
    self.idx2word[#self.idx2word + 1] = word
    self.word2idx[word] = #self.idx2word
  end
  return self.word2idx[word]
end

function Dictionary:len() return #self.idx2word end

local Corpus = {}
Corpus.__index = Corpus

-- `line.split() + ['<eos>']`: the words of a line split at white space, then <eos>
local function words_of(line)
  local words = {}
  for word in line:gmatch("%S+") do words[#words + 1] = word end
  words[#words + 1] = "<eos>"
  return words
end

function Corpus:tokenize(path)
  -- Add words to the dictionary
  local f = assert(io.open(path, "r"))
  for line in f:lines() do
    for _, word in ipairs(words_of(line)) do self.dictionary:add_word(word) end
  end
  f:close()
  -- Tokenize file content
  f = assert(io.open(path, "r"))
  local ids = {}
  for line in f:lines() do
    for _, word in ipairs(words_of(line)) do ids[#ids + 1] = self.dictionary.word2idx[word] end
  end
  f:close()
  return wick.tensor(ids, { dtype = "int64" })
end

function data.Corpus(path)
  local self = setmetatable({ dictionary = Dictionary.new() }, Corpus)
  self.train = self:tokenize(path .. "/train.txt")
  self.valid = self:tokenize(path .. "/valid.txt")
  self.test = self:tokenize(path .. "/test.txt")
  return self
end

local function default_files()
  local dir = "/usr/share/common-licenses"
  local names = {}
  local p = io.popen("find " .. dir .. " -maxdepth 1 -type f 2>/dev/null")
  if p then
    for name in p:lines() do names[#names + 1] = name end
    p:close()
  end
  table.sort(names)
  return names
end

-- Writes dir/train.txt, valid.txt and test.txt from the lines of `files` (an
-- array of paths; default: /usr/share/common-licenses/*); returns dir.
function data.prepare(dir, files)
  files = files or default_files()
  if #files == 0 then error("data.prepare: no text files to make a corpus from") end
  os.execute("mkdir -p '" .. dir .. "'")
  local out = {}
  for _, split in ipairs({ "train", "valid", "test" }) do
    out[split] = assert(io.open(dir .. "/" .. split .. ".txt", "w"))
  end
  local n = 0
  for _, path in ipairs(files) do
    local f = io.open(path, "r")
    if f then
      for line in f:lines() do
        local k = n % 10
        out[k < 8 and "train" or (k == 8 and "valid" or "test")]:write(line, "\n")
        n = n + 1
      end
      f:close()
    end
  end
  for _, f in pairs(out) do f:close() end
  return dir
end

return data
