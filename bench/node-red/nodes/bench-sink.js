'use strict';
// Terminal node for the benchmark flows: records the arrival of a message by
// calling the hook that run.js installed. It has no outputs.
const hub = require('./lib/hub');

module.exports = function (RED) {
    function BenchSinkNode(config) {
        RED.nodes.createNode(this, config);
        const node = this;
        const tag = config.tag;
        node.on('input', function (msg, send, done) {
            hub.onArrive(tag, msg);
            done();
        });
    }
    RED.nodes.registerType('bench-sink', BenchSinkNode);
};
