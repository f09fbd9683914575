// --pre-js for wasm programs run under node: let getenv() see node's
// environment (GTEST_*, NASCENT_NUM_THREADS...) as a native program would;
// emscripten otherwise shows the program a fixed, made-up environment.
Module['preRun'] = Module['preRun'] || [];
Module['preRun'].push(function() {
  if (typeof ENV === 'undefined') return;
  Object.assign(ENV, process.env);
  // The program's isatty() is always true here, so hide TERM when output
  // goes to a pipe or file: no colour codes in logs.
  if (!process.stdout.isTTY) delete ENV['TERM'];
});
