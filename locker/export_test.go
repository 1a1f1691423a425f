package locker

// AssembleLua returns the source of lua/<name>.lua with its includes, as
// the core runs it: the fake Scripter of the external tests runs what the
// core sends, and the Lua tests read the preludes through it.
var AssembleLua = assemble
