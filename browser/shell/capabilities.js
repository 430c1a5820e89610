// What this page offers the agent (issue 64), each command only where the browser has the API,
// and each answer in the shape OpenClaw's own apps give (its CLI and tools parse them). Nothing
// here runs until the bridge sends an invoke, which it sends only for commands the operator
// allowed: a page whose camera.snap is not allowed never calls getUserMedia.
//
// Declared honestly: no canvas.snapshot (no API can screenshot a cross-origin frame), no
// background work, no screen.*, sms.* or system.run.

class CommandError extends Error {
  constructor(code, message) { super(message); this.code = code; }
}

function mediaError(error) {
  if (error && error.name === "NotAllowedError") return new CommandError("PERMISSION_DENIED", "the camera is not allowed on this page");
  if (error && error.name === "NotFoundError") return new CommandError("UNAVAILABLE", "this device has no such camera");
  return new CommandError("UNAVAILABLE", `the camera failed (${error && error.name})`);
}

function toBase64(bytes) {
  let text = "";
  for (let i = 0; i < bytes.length; i += 0x8000) text += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(text);
}

async function cameraList() {
  const devices = await navigator.mediaDevices.enumerateDevices();
  return { devices: devices.filter((d) => d.kind === "videoinput").map((d) => ({ id: d.deviceId, name: d.label || "camera" })) };
}

async function cameraSnap(params) {
  const facing = params.facing === "back" ? "environment" : "user";
  const video = params.deviceId ? { deviceId: { exact: String(params.deviceId) } } : { facingMode: facing };
  let stream;
  try { stream = await navigator.mediaDevices.getUserMedia({ video, audio: false }); } catch (error) { throw mediaError(error); }
  try {
    const element = document.createElement("video");
    element.muted = true;
    element.playsInline = true;
    element.srcObject = stream;
    await element.play();
    if (typeof params.delayMs === "number" && params.delayMs > 0) await new Promise((r) => setTimeout(r, Math.min(params.delayMs, 10000)));
    const maxWidth = typeof params.maxWidth === "number" && params.maxWidth > 0 ? params.maxWidth : 1600;
    const scale = Math.min(1, maxWidth / element.videoWidth);
    const canvas = document.createElement("canvas");
    canvas.width = Math.round(element.videoWidth * scale);
    canvas.height = Math.round(element.videoHeight * scale);
    canvas.getContext("2d").drawImage(element, 0, 0, canvas.width, canvas.height);
    const quality = typeof params.quality === "number" ? Math.min(Math.max(params.quality, 0.1), 1) : 0.85;
    const blob = await new Promise((resolve) => canvas.toBlob(resolve, "image/jpeg", quality));
    return { format: "jpg", base64: toBase64(new Uint8Array(await blob.arrayBuffer())), width: canvas.width, height: canvas.height };
  } finally {
    for (const track of stream.getTracks()) track.stop();
  }
}

function locationGet(params) {
  return new Promise((resolve, reject) => {
    const timeout = typeof params.timeoutMs === "number" ? Math.min(Math.max(params.timeoutMs, 1000), 60000) : 10000;
    navigator.geolocation.getCurrentPosition(
      (p) => resolve({
        lat: p.coords.latitude, lon: p.coords.longitude, accuracyMeters: p.coords.accuracy,
        ...(p.coords.altitude === null ? {} : { altitudeMeters: p.coords.altitude }), timestamp: new Date(p.timestamp).toISOString(),
      }),
      (error) => reject(
        error.code === 1 ? new CommandError("PERMISSION_DENIED", "location is not allowed on this page")
          : error.code === 3 ? new CommandError("TIMEOUT", "no location fix in time")
            : new CommandError("UNAVAILABLE", "no location is available")),
      { enableHighAccuracy: params.desiredAccuracy === "precise", timeout, maximumAge: typeof params.maxAgeMs === "number" ? params.maxAgeMs : 0 },
    );
  });
}

async function systemNotify(params) {
  const title = typeof params.title === "string" ? params.title.slice(0, 200) : "";
  const body = typeof params.body === "string" ? params.body.slice(0, 1000) : "";
  if (!title && !body) throw new CommandError("INVALID_PARAMS", "give a title or a body");
  if (Notification.permission !== "granted") throw new CommandError("PERMISSION_DENIED", "notifications are not allowed on this page");
  const registration = await navigator.serviceWorker.ready;
  await registration.showNotification(title || "lanbridge", { body, tag: `lanbridge-${Date.now()}` });
  return { delivered: true };
}

/** Records `stream` until `stop()` resolves: the bytes and the recorder's MIME type. */
function record(stream) {
  const type = ["video/webm;codecs=vp8,opus", "video/webm", "audio/webm;codecs=opus", "audio/webm", "audio/mp4", "video/mp4"]
    .find((t) => stream.getVideoTracks().length > 0 === t.startsWith("video/") && MediaRecorder.isTypeSupported(t));
  const recorder = new MediaRecorder(stream, type ? { mimeType: type } : {});
  const chunks = [];
  recorder.ondataavailable = (event) => { if (event.data.size > 0) chunks.push(event.data); };
  const started = performance.now();
  const done = new Promise((resolve) => { recorder.onstop = resolve; });
  recorder.start();
  return {
    async stop() {
      if (recorder.state !== "inactive") recorder.stop();
      await done;
      for (const track of stream.getTracks()) track.stop();
      const blob = new Blob(chunks, { type: recorder.mimeType });
      return { bytes: new Uint8Array(await blob.arrayBuffer()), mimeType: recorder.mimeType, durationMs: Math.round(performance.now() - started) };
    },
  };
}

const formatOf = (mimeType) => (mimeType.includes("mp4") ? "mp4" : "webm");

async function cameraClip(params) {
  const durationMs = typeof params.durationMs === "number" ? Math.min(Math.max(params.durationMs, 250), 60000) : 3000;
  const audio = params.includeAudio !== false;
  let stream;
  try { stream = await navigator.mediaDevices.getUserMedia({ video: { facingMode: params.facing === "back" ? "environment" : "user" }, audio }); } catch (error) { throw mediaError(error); }
  const recording = record(stream);
  await new Promise((r) => setTimeout(r, durationMs));
  const clip = await recording.stop();
  return { format: formatOf(clip.mimeType), base64: toBase64(clip.bytes), durationMs: clip.durationMs, hasAudio: audio };
}

// Voice: the page records, the agent transcribes (browsers' own recognition sends audio to a
// vendor's server, or is missing). voice.start begins; voice.stop ends it and returns the audio.
let voice = null;

async function voiceStart(params) {
  if (voice) throw new CommandError("BUSY", "already recording");
  let stream;
  try { stream = await navigator.mediaDevices.getUserMedia({ audio: true, video: false }); } catch (error) { throw mediaError(error); }
  const maxMs = typeof params.maxMs === "number" ? Math.min(Math.max(params.maxMs, 1000), 300000) : 60000;
  const recording = record(stream);
  voice = { recording, limit: setTimeout(() => voiceStop().catch(() => {}), maxMs) };
  return { recording: true, maxMs };
}

async function voiceStop() {
  if (!voice) throw new CommandError("NOT_RECORDING", "voice.start first");
  const { recording, limit } = voice;
  voice = null;
  clearTimeout(limit);
  const audio = await recording.stop();
  return { format: formatOf(audio.mimeType), mimeType: audio.mimeType, base64: toBase64(audio.bytes), durationMs: audio.durationMs };
}

/** The commands this browser can run, by name. */
export function available() {
  const table = {};
  if (navigator.mediaDevices && navigator.mediaDevices.getUserMedia) {
    table["camera.list"] = cameraList;
    table["camera.snap"] = cameraSnap;
    if (typeof MediaRecorder === "function") {
      table["camera.clip"] = cameraClip;
      table["voice.start"] = voiceStart;
      table["voice.stop"] = voiceStop;
    }
  }
  if (navigator.geolocation) table["location.get"] = locationGet;
  if ("serviceWorker" in navigator && "Notification" in window) table["system.notify"] = systemNotify;
  return table;
}

/** Runs one invoke: the `invoke.result` to send. */
export async function run(table, message) {
  const handler = Object.prototype.hasOwnProperty.call(table, message.command) ? table[message.command] : null;
  if (!handler) return { type: "invoke.result", id: message.id, ok: false, error: { code: "UNKNOWN_COMMAND", message: "this page offers no such command" } };
  const params = message.params && typeof message.params === "object" && !Array.isArray(message.params) ? message.params : {};
  try {
    return { type: "invoke.result", id: message.id, ok: true, payload: await handler(params) };
  } catch (error) {
    const code = error && typeof error.code === "string" ? error.code : "COMMAND_FAILED";
    return { type: "invoke.result", id: message.id, ok: false, error: { code, message: String(error.message || error) } };
  }
}
