#!/usr/bin/env python3
"""A node's webview, as far as the canvas relay can tell: HTTPS with the certificate pinned by
the SHA-256 that came in `welcome.canvas` (lanbridge_node.canvas, the Python SDK's helper).

  canvas_client.py fetch URL SHA256 [GET|HEAD]     -> "status N bytes M sha256 H" then "body JSON" (first 4 KiB)
  canvas_client.py raw URL SHA256 HEAD_AS_JSON     -> sends the request head as given; "status N" or "closed"
  canvas_client.py live URL SHA256                 -> opens the live-reload socket; "open", then "message TEXT"
  canvas_client.py speak URL SHA256 TEXT           -> opens it, waits for a message, sends TEXT; "open", "message M", "closed CODE"
  canvas_client.py smuggle URL SHA256 FIRST LATER  -> sends FIRST (JSON) in one write, reads the answer, then sends LATER (JSON)
                                                      on the same connection; "status N", then "closed" or "open" after LATER
  canvas_client.py kept URL SHA256 REQUEST...       -> sends each request (JSON) on one connection, one at a time, reading each
                                                      answer whole: "status N keep|close" per answer, "closed" once the relay hung up
  canvas_client.py resume URL SHA256                -> two connections, a request each; the second offers the first's TLS
                                                      session: "first new|reused", "second new|reused"
  canvas_client.py slow URL SHA256 SECONDS         -> sends a head a byte a second; "closed after S" when cut
  canvas_client.py flood URL SHA256 RATE SECONDS   -> RATE bad requests a second (fresh TLS each); "flood N sent M answered"
  canvas_client.py browser URL SHA256              -> headless Chromium, the relay's key pinned (--ignore-certificate-errors-spki-list),
                                                      loads URL; "title T" once the page's live-reload socket is open (title "live")
  canvas_client.py attack URL SHA256               -> the same, for a page whose title becomes "blocked …" (canvas/attack.html);
                                                      "title T" then, with what the page logged, "console JSON"
"""
import asyncio, json, os, socket, ssl, sys, time
from urllib.parse import urlsplit

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "sdk", "python"))
from lanbridge_node.canvas import fetch, pinned_connection  # noqa: E402


def say(line):
    print(line, flush=True)


def tls_socket(url, pin, timeout=10):
    connection, _ = pinned_connection(url, pin, timeout)
    return connection.sock


def read_status(sock):
    data = b""
    try:
        while b"\r\n" not in data:
            chunk = sock.recv(4096)
            if not chunk:
                break
            data += chunk
    except (OSError, ssl.SSLError):
        pass
    line = data.split(b"\r\n", 1)[0].decode(errors="replace")
    return f"status {line.split(' ')[1]}" if line.startswith("HTTP/1.1 ") else "closed"


def main():
    mode, url, pin = sys.argv[1], sys.argv[2], sys.argv[3]
    if mode == "fetch":
        import hashlib, http.client
        method = sys.argv[4] if len(sys.argv) > 4 else "GET"
        connection, target = pinned_connection(url, pin)
        connection.request(method, target)
        response = connection.getresponse()
        status, headers = response.status, {k.lower(): v for k, v in response.getheaders()}
        try:
            body = response.read()
        except http.client.IncompleteRead as cut:  # the relay stopped it (a limit): what came
            body = cut.partial
            say("cut")
        say(f"status {status} bytes {len(body)} sha256 {hashlib.sha256(body).hexdigest()}")
        say("headers " + json.dumps(headers, sort_keys=True))
        say("body " + json.dumps(body[:4096].decode("utf-8", errors="replace")))
    elif mode == "raw":
        sock = tls_socket(url, pin)
        sock.sendall(json.loads(sys.argv[4]).encode("latin-1"))
        say(read_status(sock))
    elif mode == "smuggle":
        sock = tls_socket(url, pin)
        sock.sendall(json.loads(sys.argv[4]).encode("latin-1"))
        say(read_status(sock))
        try:
            sock.sendall(json.loads(sys.argv[5]).encode("latin-1"))
            sock.settimeout(5)
            while sock.recv(4096):
                pass
            say("closed")
        except (OSError, ssl.SSLError) as e:
            say("closed" if not isinstance(e, TimeoutError) else "open")
    elif mode == "kept":
        import http.client
        sock = tls_socket(url, pin)
        for raw in sys.argv[4:]:
            try:
                sock.sendall(json.loads(raw).encode("latin-1"))
                response = http.client.HTTPResponse(sock, method="GET")
                response.begin()
                response.read()
                say(f"status {response.status} {'close' if response.will_close else 'keep'}")
            except (OSError, ssl.SSLError, http.client.HTTPException):
                say("closed")
                break
    elif mode == "resume":
        import hashlib, hmac
        context = ssl.create_default_context()
        context.check_hostname, context.verify_mode = False, ssl.CERT_NONE  # the pin below replaces CA checks
        parts = urlsplit(url)
        session = None
        for name in ("first", "second"):
            with socket.create_connection((parts.hostname, parts.port), timeout=10) as raw:
                with context.wrap_socket(raw, session=session) as sock:
                    if not hmac.compare_digest(hashlib.sha256(sock.getpeercert(binary_form=True)).hexdigest(), pin.lower()):
                        raise SystemExit("the relay's certificate is not the pinned one")
                    sock.sendall(f"GET {parts.path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
                    while sock.recv(65536):
                        pass
                    say(f"{name} {'reused' if sock.session_reused else 'new'}")
                    session = sock.session  # a TLS 1.3 ticket arrives after the handshake: taken once the answer is read
    elif mode == "slow":
        sock = tls_socket(url, pin, timeout=60)
        start = time.monotonic()
        try:
            for byte in b"GET /__openclaw__/a2ui/ HTTP/1.1\r\nHost: x\r\n" * 100:
                sock.sendall(bytes([byte]))
                time.sleep(float(sys.argv[4]))
        except (OSError, ssl.SSLError):
            pass
        say(f"closed after {time.monotonic() - start:.1f}")
    elif mode == "browser":
        browser(url, pin)
    elif mode == "attack":
        browser(url, pin, done=lambda title: title.startswith("blocked") or title == "reached", settle=1.0)
    elif mode == "live":
        asyncio.run(live(url, pin))
    elif mode == "speak":
        asyncio.run(live(url, pin, speak=sys.argv[4]))
    elif mode == "flood":
        asyncio.run(flood(url, int(sys.argv[4]), float(sys.argv[5])))


async def flood(url, rate, seconds):
    """`rate` requests a second with a wrong capability, each on a fresh TLS connection, up to
    200 at once, from one address; counts what was sent and what got an answer."""
    parts = urlsplit(url)
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    counts = {"sent": 0, "answered": 0}
    gate = asyncio.Semaphore(200)

    async def one():
        async with gate:
            try:
                reader, writer = await asyncio.wait_for(asyncio.open_connection(parts.hostname, parts.port, ssl=context), 5)
                writer.write(b"GET /__openclaw__/cap/AAAAAAAAAAAAAAAAAAAAAAAA/__openclaw__/a2ui/ HTTP/1.1\r\nHost: x\r\n\r\n")
                counts["sent"] += 1
                if (await asyncio.wait_for(reader.readline(), 5)).startswith(b"HTTP/1.1 "):
                    counts["answered"] += 1
                writer.close()
            except (OSError, ssl.SSLError, asyncio.TimeoutError):
                pass

    tasks, start = [], time.monotonic()
    while (elapsed := time.monotonic() - start) < seconds:
        due = int(elapsed * rate) - len(tasks)
        tasks += [asyncio.create_task(one()) for _ in range(max(0, due))]
        await asyncio.sleep(0.005)
    await asyncio.gather(*tasks)
    say(f"flood {counts['sent']} sent {counts['answered']} answered")


def browser(url, pin, done=lambda title: title == "live", settle=0.0):
    """Chromium trusts no CA for the relay: only the key whose SPKI hash we pass, and only after
    the certificate it belongs to matched the pin from the Noise session."""
    import base64, hashlib
    from cryptography import x509
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.support.ui import WebDriverWait
    sock = tls_socket(url, pin)  # raises unless the certificate is the pinned one
    der = sock.getpeercert(binary_form=True)
    sock.close()
    spki = x509.load_der_x509_certificate(der).public_key().public_bytes(Encoding.DER, PublicFormat.SubjectPublicKeyInfo)
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for flag in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                 "--ignore-certificate-errors-spki-list=" + base64.b64encode(hashlib.sha256(spki).digest()).decode()]:
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    try:
        driver.set_page_load_timeout(30)
        driver.get(url)
        try:
            WebDriverWait(driver, 20).until(lambda d: done(d.title))
        except Exception:
            pass
        say(f"title {driver.title}")
        if settle:
            time.sleep(settle)  # a navigation the page started has its moment to leave
            say(f"url {driver.current_url}")
        say("text " + json.dumps(driver.execute_script("return document.body ? document.body.innerText : ''")))
    finally:
        driver.quit()


async def live(url, pin, speak=None):
    import hashlib, hmac
    from websockets.asyncio.client import connect
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    async with connect(url.replace("https://", "wss://", 1), ssl=context, open_timeout=10) as ws:
        der = ws.transport.get_extra_info("ssl_object").getpeercert(binary_form=True)
        if not hmac.compare_digest(hashlib.sha256(der).hexdigest(), pin):
            say("pin mismatch")
            return
        say("open")
        try:
            async for message in ws:
                say(f"message {message}")
                if speak is not None:
                    await ws.send(speak)
        except Exception:
            pass
        say(f"closed {ws.close_code}" if speak is not None else "closed")


main()
