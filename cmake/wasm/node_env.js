// --pre-js for wasm programs run under node: let getenv() see node's
// environment (GTEST_*, NASCENT_NUM_THREADS...) as a native program would;
// emscripten otherwise shows the program a fixed, made-up environment.
Module['preRun'] = Module['preRun'] || [];
Module['preRun'].push(function() {
  if (typeof ENV !== 'undefined') Object.assign(ENV, process.env);
});
