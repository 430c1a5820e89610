// Preloaded by ./gateway: prints "listening PORT" on stdout once the gateway's own port
// ($LANBRIDGE_HARNESS_PORT) accepts connections, so whoever started it waits for an event, not a time.
"use strict";
const net = require("node:net");
const wanted = Number(process.env.LANBRIDGE_HARNESS_PORT);
let said = false;
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  this.once("listening", () => {
    const address = this.address();
    if (!said && address && typeof address === "object" && address.port === wanted) {
      said = true;
      process.stdout.write(`listening ${wanted}\n`);
    }
  });
  return listen.apply(this, args);
};
