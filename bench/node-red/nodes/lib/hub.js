'use strict';
// Shared between run.js and the bench-sink node (same module instance via
// require's cache). run.js installs `onArrive` before driving each scenario.
module.exports = {
    onArrive: null,
};
