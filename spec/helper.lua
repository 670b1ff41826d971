package.path = "./lua/?.lua;./lua/?/init.lua;" .. package.path
-- Lua 5.2+ (the Lua 5.4 runs, WICK_LUA54): the specs call 5.1's global unpack
unpack = unpack or table.unpack
