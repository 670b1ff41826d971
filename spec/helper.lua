package.path = "./lua/?.lua;./lua/?/init.lua;" .. package.path
