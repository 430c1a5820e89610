// The agent's canvas in the page (issue 64): a sandboxed frame on the canvas relay's origin (its
// own port, so another origin than this page's), given no permission (no camera, microphone or
// location delegation), unable to navigate this page. The relay is reached by this page's own name:
// its certificate there is the browser door's, which this browser trusts.
//
// Offered: canvas.present, canvas.hide, canvas.navigate. Not offered, honestly: canvas.snapshot (no
// browser API can screenshot a cross-origin frame), canvas.eval and canvas.a2ui.* (they need a
// script inside the frame that the relay does not inject yet).

class CanvasError extends Error {
  constructor(code, message) { super(message); this.code = code; }
}

/**
 * The canvas commands. `frame` is the iframe, `box` what shows it, `grant()` a fresh
 * `{url, expiresAtMs}` from the bridge (canvas.refresh), `port` the relay's port.
 */
export function canvasCommands({ frame, box, grant, port }) {
  let wakeLock = null;

  async function target(url) {
    const canvas = await grant();
    const base = new URL(String(canvas.url));
    base.hostname = location.hostname;
    base.port = String(port);
    if (url === undefined || url === null || url === "") return `${base.href}/__openclaw__/canvas/`;
    if (typeof url !== "string") throw new CanvasError("INVALID_PARAMS", "url must be a string");
    if (url.startsWith("/") && !url.startsWith("//")) return base.href + url;
    let parsed;
    try { parsed = new URL(url); } catch { throw new CanvasError("INVALID_PARAMS", "url is not a URL"); }
    if (parsed.protocol !== "https:") throw new CanvasError("INVALID_PARAMS", "a canvas shows https: pages only");
    // The bridge rewrites the canvas host's URLs to the relay as this connection reached it (an
    // address): here the relay is reached by this page's name, whose certificate the browser trusts.
    if (parsed.origin === new URL(String(canvas.url)).origin) {
      parsed.hostname = location.hostname;
      parsed.port = String(port);
    }
    return parsed.href;
  }

  async function show(url) {
    frame.src = await target(url);
    box.hidden = false;
    // The screen stays on while a canvas shows, where the browser allows it.
    if (navigator.wakeLock && !wakeLock) wakeLock = await navigator.wakeLock.request("screen").catch(() => null);
    return { url: frame.src.replace(/\/__openclaw__\/cap\/[^/]+/, "/__openclaw__/cap/…") };
  }

  return {
    "canvas.present": (params) => show(params.url),
    "canvas.navigate": (params) => {
      if (typeof params.url !== "string" || params.url === "") throw new CanvasError("INVALID_PARAMS", "canvas.navigate needs a url");
      return show(params.url);
    },
    "canvas.hide": async () => {
      box.hidden = true;
      frame.src = "about:blank";
      if (wakeLock) { await wakeLock.release().catch(() => {}); wakeLock = null; }
      return {};
    },
  };
}
