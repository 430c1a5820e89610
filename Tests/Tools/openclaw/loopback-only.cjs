// Preloaded into every OpenClaw process the harness starts (node --require): it may reach loopback
// and Unix sockets only. A TCP connect, a UDP send or a DNS lookup for anything else fails at once
// with "lanbridge harness: refused …", and the attempt is written to stderr, so a test can say
// nothing tried to leave the machine (the update check and every provider are off as well).
"use strict";
const net = require("node:net");
const dgram = require("node:dgram");
const dns = require("node:dns");

const loopbackName = (host) => host === "localhost" || host === "ip6-localhost" || host === "";
function isLoopback(host) {
  if (host === undefined || host === null) return true; // Node's default is localhost
  host = String(host).replace(/^\[|\]$/g, "").toLowerCase();
  if (loopbackName(host)) return true;
  if (net.isIPv4(host)) return host.startsWith("127.");
  if (net.isIPv6(host)) return host === "::1" || host.startsWith("::ffff:127.");
  return false;
}
function refuse(what) {
  const error = new Error(`lanbridge harness: refused ${what} (loopback only)`);
  error.code = "ECONNREFUSED";
  process.stderr.write(`lanbridge harness: refused ${what}\n`);
  return error;
}

const connect = net.Socket.prototype.connect;
net.Socket.prototype.connect = function (...args) {
  const first = args[0];
  const options = Array.isArray(first) ? first[0] : first;
  let host, path;
  if (options && typeof options === "object") ({ host, path } = options);
  else if (typeof first === "string" && isNaN(Number(first))) path = first;
  else host = typeof args[1] === "string" ? args[1] : undefined;
  if (!path && !isLoopback(host)) {
    const error = refuse(`a connection to ${host}`);
    process.nextTick(() => this.destroy(error));
    return this;
  }
  return connect.apply(this, args);
};

const send = dgram.Socket.prototype.send;
dgram.Socket.prototype.send = function (...args) {
  const address = args.find((a, i) => i > 0 && typeof a === "string");
  if (!isLoopback(address)) {
    const callback = args.find((a) => typeof a === "function");
    const error = refuse(`a datagram to ${address}`);
    if (callback) process.nextTick(() => callback(error));
    return;
  }
  return send.apply(this, args);
};

const lookup = dns.lookup;
dns.lookup = function (hostname, ...rest) {
  const callback = rest.find((a) => typeof a === "function");
  if (!isLoopback(hostname)) {
    const error = refuse(`a DNS lookup of ${hostname}`);
    process.nextTick(() => callback(error));
    return {};
  }
  return lookup.call(this, hostname, ...rest);
};
const promiseLookup = dns.promises.lookup;
dns.promises.lookup = async function (hostname, ...rest) {
  if (!isLoopback(hostname)) throw refuse(`a DNS lookup of ${hostname}`);
  return promiseLookup.call(this, hostname, ...rest);
};
for (const name of ["resolve", "resolve4", "resolve6", "resolveAny", "resolveSrv", "resolveTxt"]) {
  const original = dns.promises[name];
  if (typeof original === "function") {
    dns.promises[name] = async function (hostname, ...rest) {
      if (!isLoopback(hostname)) throw refuse(`a DNS query for ${hostname}`);
      return original.call(this, hostname, ...rest);
    };
  }
}
