"""The approval console against a real daemon, in a real browser (Debian's chromium and
chromedriver through selenium), with real node-sim processes pairing against it.

    console_browser.py browser --lanbridge BIN --node-sim BIN --state-dir DIR --bridge-port N --console URL --shots DIR
    console_browser.py attacks --lanbridge BIN --state-dir DIR --console URL
    console_browser.py other-user --lanbridge BIN --state-dir DIR --console URL   (as root: runs requests as nobody)

Prints one "ok STEP" line per step that passed; exits 1 with the reason at the first that fails.
Every wait is for an event (a page element, a node-sim line), bounded by a timeout.
"""
import argparse
import http.client
import json
import os
import queue
import select
import signal
import subprocess
import sys
import tempfile
import threading
import urllib.parse

TIMEOUT = 30


def fail(message):
    print(f"FAIL {message}", flush=True)
    sys.exit(1)


def ok(step):
    print(f"ok {step}", flush=True)


def cli(args, lanbridge, state_dir, check=True):
    run = subprocess.run([lanbridge, *args, "--state-dir", state_dir], capture_output=True, text=True, timeout=60)
    if check and run.returncode != 0:
        fail(f"lanbridge {' '.join(args)} exited {run.returncode}: {run.stderr.strip()}")
    return run


def login_link(lanbridge, state_dir):
    return json.loads(cli(["ui", "--json"], lanbridge, state_dir).stdout)["url"]


class NodeSim:
    """A lanbridge-node-sim process whose output lines are read on a thread."""

    def __init__(self, binary, port, name, extra=()):
        self.state = tempfile.mkdtemp(prefix="console-node-")
        connect = [] if any(a == "--invite" for a in extra) else ["--connect", f"127.0.0.1:{port}"]
        self.process = subprocess.Popen([binary, "--state-dir", self.state, *connect, "--name", name, *extra],
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.PIPE, text=True)
        self.lines = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.process.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def wait(self, *prefixes):
        """The next line starting with one of `prefixes` (others are skipped)."""
        while True:
            try:
                line = self.lines.get(timeout=TIMEOUT)
            except queue.Empty:
                fail(f"node-sim never printed {prefixes}")
            if line is None:
                fail(f"node-sim ended before printing {prefixes}")
            if line.startswith(prefixes):
                return line

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()


def browser_session(console):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for flag in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1200,1000", "--disable-gpu"]:
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    driver.set_page_load_timeout(TIMEOUT)
    return driver


def browser(args):
    from selenium.common.exceptions import (NoAlertPresentException, NoSuchElementException, StaleElementReferenceException, TimeoutException,
                                            WebDriverException)
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    os.makedirs(args.shots, exist_ok=True)
    driver = browser_session(args.console)
    nodes = []

    def until(what, condition):
        try:
            # The live section replaces an entry when it changes: an element found a moment ago may be gone.
            return WebDriverWait(driver, TIMEOUT, ignored_exceptions=[StaleElementReferenceException, NoSuchElementException]).until(condition)
        except TimeoutException:
            fail(f"the page never showed {what}: {driver.current_url} {driver.find_element(By.TAG_NAME, 'body').text[:3000]!r}")

    def replaced(page):
        """True once `page` (the old document's root) is gone. Mid-navigation chromedriver may say so
        as "does not belong to the document" instead of a stale element (seen under a CPU hog)."""
        try:
            page.is_enabled()
            return False
        except StaleElementReferenceException:
            return True
        except WebDriverException as error:
            if "does not belong to the document" in str(error):
                return True
            raise

    def submit(action):
        """Runs `action` (a click or a submit), waits for the next page, and returns its flash message."""
        page = driver.find_element(By.TAG_NAME, "html")
        action()
        until("the next page", lambda d: replaced(page))
        return until("a flash message", lambda d: d.find_element(By.CSS_SELECTOR, ".flash").text)

    def article(name):
        for a in driver.find_elements(By.CSS_SELECTOR, "article.request"):
            if a.find_element(By.TAG_NAME, "h2").text == name:
                return a
        return None

    def no_alert(where):
        try:
            driver.switch_to.alert
            fail(f"an alert fired ({where}): a node's name ran as script")
        except NoAlertPresentException:
            pass

    def shot(name):
        driver.save_screenshot(os.path.join(args.shots, f"{name}.png"))

    def invoke(node_id):
        run = cli(["nodes", "invoke", "--node", node_id, "--command", "device.echo", "--params", '{"x":1}'], args.lanbridge, args.state_dir, check=False)
        return run.returncode

    def sim(name, *extra):
        node = NodeSim(args.node_sim, args.bridge_port, name, extra)
        nodes.append(node)
        return node

    try:
        # Log in through `lanbridge ui`'s link: it lands on a URL without the token.
        link = login_link(args.lanbridge, args.state_dir)
        driver.get(link)
        until("the pending page", lambda d: d.current_url.rstrip("/") == args.console and d.title.startswith("Pending"))
        cookie = driver.get_cookie("lanbridge_session")
        if not cookie or not cookie.get("httpOnly") or cookie.get("sameSite") != "Strict":
            fail(f"the session cookie is not HttpOnly and SameSite=Strict: {cookie}")
        ok("logged in through lanbridge ui's link; the address bar has no token")

        # A node asks to pair and appears live, with no reload. Its name is markup: it must show as text.
        driver.execute_script("window.notReloaded = true")
        xss = "<img src=x onerror=alert(1)>"
        first = sim(xss, "--camera")
        node_id = first.wait("node").split()[1]
        code, request_id = (lambda parts: (parts[1], parts[3]))(first.wait("code").split())
        until("the request with its code field", lambda d: article(xss) is not None and article(xss).find_elements(By.NAME, "code"))
        if not driver.execute_script("return window.notReloaded === true"):
            fail("the page reloaded to show the request")
        if article(xss).find_elements(By.TAG_NAME, "img"):
            fail("the node's name became an <img> element")
        no_alert("pending request")
        if code in driver.page_source:
            fail("the page shows the bridge's code: it must be typed from the device, not copied")
        ok("a pairing request appeared live, its markup name shown as text, no code on the page")
        shot("pending")

        # A wrong code is refused and counted, as the CLI counts it.
        wrong = f"{(int(code) + 1) % 1000000:06d}"
        box = article(xss).find_element(By.NAME, "code")
        box.send_keys(wrong)
        message = submit(box.submit)
        if "code" not in message.lower():
            fail(f"a wrong code was not refused: {message!r}")
        pending = json.loads(cli(["nodes", "pending", "--json"], args.lanbridge, args.state_dir).stdout)
        if [r["codeMismatches"] for r in pending if r["requestId"] == request_id] != [1]:
            fail(f"the wrong code was not counted: {pending}")
        until("the wrong-code count", lambda d: "wrong codes 1" in article(xss).text)
        ok("a wrong code was refused and counted")

        # The right code approves; node-sim reports it is paired. Camera capture was not ticked.
        box = article(xss).find_element(By.NAME, "code")
        box.send_keys(code)
        message = submit(box.submit)
        if not message.startswith("Approved"):
            fail(f"the right code did not approve: {message!r}")
        first.wait("paired")
        first.wait("connected")
        described = json.loads(cli(["nodes", "describe", node_id, "--json"], args.lanbridge, args.state_dir).stdout)
        if "camera.snap" in described["allowedCommands"]:
            fail("approval granted camera.snap without it being ticked")
        no_alert("node page")
        withheld = driver.find_element(By.CSS_SELECTOR, ".withheld")
        if "camera.snap" not in withheld.text or "withheld" not in withheld.text or not withheld.find_elements(By.TAG_NAME, "button"):
            fail(f"the node page does not mark camera.snap withheld with a Grant button: {withheld.text!r}")
        ok("the right code approved; node-sim paired; camera.snap withheld, and marked so")
        shot("node")

        # A rule edited in the page takes effect on the next invoke.
        def rule(kind, expected_exit, what):
            form = driver.find_element(By.CSS_SELECTOR, f"form[action$='/{kind}'] input[type=text][name=pattern]")
            form.send_keys("device.echo")
            if not submit(form.submit).startswith("Allowed" if kind == "allow" else "Denied"):
                fail(f"{kind} device.echo failed")
            if invoke(node_id) != expected_exit:
                fail(f"device.echo {what}")

        if invoke(node_id) != 1:
            fail("device.echo ran before it was allowed")
        rule("allow", 0, "was refused right after the page allowed it")
        rule("deny", 1, "still ran after the page denied it")
        ok("rules edited in the page applied to the next invoke (allow, then deny)")

        # Later hides a request until another device asks; Reject and Reject-and-block.
        driver.get(args.console + "/")
        second = sim("Second phone")
        second.wait("code")
        until("the second request", lambda d: article("Second phone") is not None and article("Second phone").find_elements(By.NAME, "code"))
        submit(article("Second phone").find_element(By.XPATH, ".//form[@action='/pending/later']//button").click)
        until("the second request put off", lambda d: article("Second phone") is None)
        third = sim("Third phone")
        third.wait("code")
        until("both requests, once a new one arrived", lambda d: article("Third phone") is not None and article("Second phone") is not None)
        ok("Later hid a request until another device asked")
        if not submit(article("Second phone").find_element(By.XPATH, ".//button[@name='block' and @value='0']").click).startswith("Rejected"):
            fail("Reject did not reject")
        second.wait("error", "disconnected")
        until("the rejected request gone", lambda d: article("Second phone") is None)
        if "blocked" not in submit(article("Third phone").find_element(By.XPATH, ".//button[@name='block' and @value='1']").click):
            fail("Reject and block did not block")
        driver.get(args.console + "/nodes")
        until("the blocked key", lambda d: "Third phone" in d.find_element(By.TAG_NAME, "table").text)
        shot("nodes")
        if not submit(driver.find_element(By.CSS_SELECTOR, "form[action='/blocked/unblock'] button").click).startswith("Unblocked Third phone"):
            fail("Unblock did not unblock")
        blocked = json.loads(cli(["status", "--json"], args.lanbridge, args.state_dir).stdout)["nodes"]["blocked"]
        if blocked != 0:
            fail(f"{blocked} key(s) still blocked after Unblock")
        ok("Reject, Reject and block (the key listed as blocked), and Unblock")

        # An invite: its QR image decodes (zbarimg) to the URI shown, and node-sim pairs with it.
        driver.get(args.console + "/invites")
        driver.find_element(By.NAME, "name").send_keys("Invited tablet")
        driver.find_element(By.CSS_SELECTOR, "form[action='/invites/create'] button").click()
        qr = until("the invite's QR code", lambda d: d.find_element(By.CSS_SELECTOR, ".qr svg"))
        uri = driver.find_element(By.ID, "invite-uri").text
        image = os.path.join(args.shots, "invite-qr.png")
        qr.screenshot(image)
        decoded = subprocess.run(["zbarimg", "--raw", "-q", image], capture_output=True, text=True, timeout=30).stdout.strip()
        if decoded != uri or not uri.startswith("lanbridge://"):
            fail(f"the QR code decodes to {decoded!r}, the page shows {uri!r}")
        shot("invites")
        # The POST redirected to a one-time view: a reload shows the invite no more and creates none.
        driver.refresh()
        until("the invites page again", lambda d: d.find_element(By.TAG_NAME, "h1"))
        if driver.find_elements(By.ID, "invite-uri"):
            fail("a reload showed the invite's secret again")
        if len(json.loads(cli(["invite", "list", "--json"], args.lanbridge, args.state_dir).stdout)) != 1:
            fail("a reload of the invite page created another invite")
        invited = sim("Invited tablet", "--invite", decoded)
        invited.wait("paired")
        driver.get(args.console + "/nodes")
        until("the invited node", lambda d: "Invited tablet" in d.find_element(By.ID, "live").text)
        ok("the invite's QR code decoded to its URI, and node-sim paired with it")

        # Issue 52: approved with "ask each time" for the camera, each photo waits for the operator,
        # whose prompt appears live; its params show as their shape, markup as text.
        driver.get(args.console + "/")
        asker_name = "<img src=x onerror=alert(3)>asker"
        asker = sim(asker_name, "--camera")
        asker_id = asker.wait("node").split()[1]
        asker_code = asker.wait("code").split()[1]
        until("the camera node's request", lambda d: article(asker_name) is not None and article(asker_name).find_elements(By.NAME, "code"))
        article(asker_name).find_element(By.CSS_SELECTOR, "input[type=radio][name='sensitive.camera.snap'][value=ask]").click()
        box = article(asker_name).find_element(By.NAME, "code")
        box.send_keys(asker_code)
        message = submit(box.submit)
        if "Asks you first: camera.snap" not in message:
            fail(f"approving with 'ask each time' did not make camera.snap an ask rule: {message!r}")
        asker.wait("connected")
        described = json.loads(cli(["nodes", "describe", asker_id, "--json"], args.lanbridge, args.state_dir).stdout)
        if described["access"].get("ask") != ["camera.snap"] or "camera.snap" in described["allowedCommands"]:
            fail(f"the approval's choice is not what paired.json holds: {described['access']}")
        ok("the approval screen's 'ask each time' made camera.snap an ask rule")

        def ask_invoke():
            """`nodes invoke camera.snap` in the background: it waits for the operator."""
            return subprocess.Popen([args.lanbridge, "nodes", "invoke", "--node", asker_id, "--command", "camera.snap",
                                     "--params", '{"<img src=x onerror=alert(4)>": "secret value 42"}', "--state-dir", args.state_dir],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

        def prompt():
            for a in driver.find_elements(By.CSS_SELECTOR, "article.ask"):
                return a
            return None

        def answer(button, expected_exit, what):
            driver.get(args.console + "/")
            driver.execute_script("window.notReloaded = true")
            waiting = ask_invoke()
            asked = until("the asked invoke's prompt", lambda d: prompt())
            if not driver.execute_script("return window.notReloaded === true"):
                fail("the page reloaded to show the prompt")
            if asked.find_elements(By.TAG_NAME, "img") or "secret value 42" in driver.page_source:
                fail(f"the prompt shows markup as elements or a param's value: {asked.get_attribute('innerHTML')[:400]!r}")
            if "camera.snap" not in asked.text or "<img src=x onerror=alert(4)>: text (15)" not in asked.text or asker_name not in asked.text:
                fail(f"the prompt lacks the node, the command or the params' shape: {asked.text!r}")
            no_alert("the ask prompt")
            if button == "approve":
                shot("asks")
            flash = submit(asked.find_element(By.XPATH, f".//button[@value='{button}']").click)
            out, err = waiting.communicate(timeout=TIMEOUT)
            if waiting.returncode != expected_exit:
                fail(f"{what}: the invoke exited {waiting.returncode}: {flash!r} {out.strip()} {err.strip()}")
            return flash, out + err

        flash, _ = answer("approve", 0, "approve once")
        ok(f"an asked invoke appeared live, escaped, and Approve once released it ({flash})")
        flash, said = answer("deny", 1, "deny")
        if "ASKED_DENIED" not in said:
            fail(f"a denied invoke did not say ASKED_DENIED: {said!r}")
        ok("Deny refused the invoke with ASKED_DENIED")
        answer("always", 0, "always allow")
        described = json.loads(cli(["nodes", "describe", asker_id, "--json"], args.lanbridge, args.state_dir).stdout)
        if described["access"].get("ask") or "camera.snap" not in described["access"]["allow"]:
            fail(f"Always allow did not turn the ask rule into an allow rule: {described['access']}")
        ok("Always allow ran it and turned the ask rule into an allow rule")

        # The Activity page: each outcome, the markup name as text, and a new invoke appears live.
        driver.get(args.console + "/activity")
        driver.execute_script("window.notReloaded = true")
        feed = until("the activity feed", lambda d: d.find_element(By.ID, "live"))
        text = feed.text
        if "ASKED_DENIED" not in text or text.count("camera.snap") < 3 or asker_name not in text or feed.find_elements(By.TAG_NAME, "img"):
            fail(f"the activity page lacks an outcome or shows markup: {text[:600]!r}")
        if "approved once by uid:" not in text or "denied by uid:" not in text:
            fail(f"the activity page does not say who answered the asks: {text[:600]!r}")
        def newest():
            rows = driver.find_elements(By.CSS_SELECTOR, "#live tr[data-key]")
            return rows[0].text if rows else ""

        if "device.echo" in newest():
            fail(f"the newest record is already a device.echo: {newest()!r}")
        cli(["nodes", "invoke", "--node", asker_id, "--command", "device.echo"], args.lanbridge, args.state_dir, check=False)
        until("the new invoke, live, on top", lambda d: "device.echo" in newest() and asker_name in newest() and "FORBIDDEN" in newest())
        if not driver.execute_script("return window.notReloaded === true"):
            fail("the activity page reloaded to show the new invoke")
        no_alert("the activity page")
        shot("activity")
        ok("the Activity page shows each outcome and who answered, and a new invoke appears live")

        # Revoke, confirmed: the node is dropped.
        driver.get(f"{args.console}/nodes/{urllib.parse.quote(node_id)}")
        driver.find_element(By.CSS_SELECTOR, "form[action$='/revoke'] button").click()
        if driver.current_url.endswith("/nodes"):
            fail("revoke went through without its confirmation")
        driver.find_element(By.CSS_SELECTOR, "form[action$='/revoke'] input[name=confirm]").click()
        if not submit(driver.find_element(By.CSS_SELECTOR, "form[action$='/revoke'] button").click).startswith("Revoked"):
            fail("revoke failed")
        first.wait("error", "disconnected")
        ok("revoke, confirmed, dropped the node")

        # The audit log names who did it, through the console, and is intact.
        driver.get(args.console + "/audit")
        text = driver.find_element(By.TAG_NAME, "main").text
        if "Intact" not in text or f"uid:{os.getuid()} (console)" not in text:
            fail(f"the audit page lacks its verdict or the console's actor: {text[:400]!r}")
        ok("the audit page: intact, with the console's actor")
        shot("audit")
        driver.get(args.console + "/status")
        shot("status")

        # A phone's width.
        driver.set_window_size(390, 844)
        driver.get(args.console + "/")
        shot("phone")
        width = driver.execute_script("return document.documentElement.scrollWidth")
        if width > 400:
            fail(f"the page scrolls sideways on a phone ({width} px wide)")
        ok("a phone-width page fits its screen")
    finally:
        driver.quit()
        for node in nodes:
            node.stop()


def request(console, method, path, headers=None, body=None):
    url = urllib.parse.urlsplit(console)
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=TIMEOUT)
    connection.request(method, path, body=body, headers=headers or {})
    response = connection.getresponse()
    data = response.read().decode()
    connection.close()
    return response.status, dict((k.lower(), v) for k, v in response.getheaders()), data


def log_in(console, link, host, what):
    """Redeems a login link (its path) as this process's uid; returns the session cookie."""
    status, headers, _ = request(console, "GET", link, {"Host": host})
    if status != 303:
        fail(f"{what} got {status}")
    return headers["set-cookie"].split(";")[0]


def attacks(args):
    host = urllib.parse.urlsplit(args.console).netloc

    status, _, _ = request(args.console, "GET", "/", {"Host": f"rebound.example:{urllib.parse.urlsplit(args.console).port}"})
    if status != 421:
        fail(f"a rebound Host got {status}, not 421")
    ok("a wrong Host gets 421")

    for method, path in [("GET", "/"), ("GET", "/nodes"), ("GET", "/events"), ("POST", "/pending/reject")]:
        status, headers, _ = request(args.console, method, path, {"Host": host}, body="request=x" if method == "POST" else None)
        if status != 401:
            fail(f"{method} {path} without a cookie got {status}")
    ok("no cookie: 401 on pages, events and writes")

    link = login_link(args.lanbridge, args.state_dir)
    path = link[len(args.console):]
    status, headers, _ = request(args.console, "GET", path, {"Host": host})
    if status != 303 or "lanbridge_session=" not in headers.get("set-cookie", ""):
        fail(f"the login link got {status}")
    cookie = headers["set-cookie"].split(";")[0]
    for name in ["content-security-policy", "x-frame-options", "referrer-policy", "x-content-type-options"]:
        if name not in headers:
            fail(f"no {name} header")
    if "'unsafe-inline'" in headers["content-security-policy"] or "default-src 'none'" not in headers["content-security-policy"]:
        fail(f"a weak CSP: {headers['content-security-policy']}")
    if headers["x-frame-options"] != "DENY" or headers["referrer-policy"] != "no-referrer":
        fail("framing or referrer headers are wrong")
    ok("the login link opens a session; CSP, X-Frame-Options and Referrer-Policy are strict")

    status, _, _ = request(args.console, "GET", path, {"Host": host})
    if status != 403:
        fail(f"a replayed login link got {status}")
    ok("a replayed login link is refused")

    status, _, page = request(args.console, "GET", "/", {"Host": host, "Cookie": cookie})
    if status != 200:
        fail(f"the session's page got {status}")
    csrf = page.split('name="csrf" value="', 1)[1].split('"', 1)[0]
    invite_form = f"csrf={csrf}&name=x&ttl=10&host="
    status, _, _ = request(args.console, "POST", "/invites/create",
                           {"Host": host, "Cookie": cookie, "Origin": "http://evil.example", "Content-Type": "application/x-www-form-urlencoded"},
                           body=invite_form)
    if status != 403:
        fail(f"a cross-origin POST got {status}")
    status, _, _ = request(args.console, "POST", "/invites/create",
                           {"Host": host, "Cookie": cookie, "Content-Type": "application/x-www-form-urlencoded"}, body="name=x&ttl=10&host=")
    if status != 403:
        fail(f"a POST without the CSRF token got {status}")
    invites = json.loads(cli(["invite", "list", "--json"], args.lanbridge, args.state_dir).stdout)
    if invites:
        fail(f"a refused POST created an invite: {invites}")
    status, _, _ = request(args.console, "POST", "/invites/create",
                           {"Host": host, "Cookie": cookie, "Origin": f"http://{host}", "Content-Type": "application/x-www-form-urlencoded"},
                           body=invite_form)
    if status != 303 or len(json.loads(cli(["invite", "list", "--json"], args.lanbridge, args.state_dir).stdout)) != 1:
        fail(f"the same POST from the console's own origin failed ({status})")
    ok("a cross-origin POST and a POST without the CSRF token change nothing; the same-origin one works")

    status, _, _ = request(args.console, "GET", "/", {"Host": host, "Cookie": "lanbridge_session=forged"})
    if status != 401:
        fail(f"a forged session cookie got {status}")
    ok("a forged session cookie gets 401")

    status, _, _ = request(args.console, "POST", "/logout",
                           {"Host": host, "Cookie": cookie, "Content-Type": "application/x-www-form-urlencoded"}, body=f"csrf={csrf}")
    after, _, _ = request(args.console, "GET", "/", {"Host": host, "Cookie": cookie})
    if status != 200 or after != 401:
        fail(f"log out got {status}, and the old cookie then {after}")
    ok("after Log out the session's cookie gets 401")

    # Wrong tokens lock nobody out (issue 36: ten of them locked every operator out for a minute).
    good = login_link(args.lanbridge, args.state_dir)[len(args.console):]
    for k in range(20):
        status, _, _ = request(args.console, "GET", f"/login?token=wrong{k}", {"Host": host})
        if status != 403:
            fail(f"wrong token {k} got {status}")
    # A link previewer's HEAD does not use the link up.
    status, _, _ = request(args.console, "HEAD", good, {"Host": host})
    if status != 405:
        fail(f"HEAD on a login link got {status}, not 405")
    cookie = log_in(args.console, good, host, "after 20 wrong tokens and a HEAD, a good link")
    ok("20 wrong tokens lock nobody out; HEAD does not redeem a link (405)")

    # Sessions are listed and ended from the CLI.
    listed = json.loads(cli(["ui", "--sessions", "--json"], args.lanbridge, args.state_dir).stdout)["sessions"]
    if len(listed) != 1 or listed[0]["uid"] != os.getuid():
        fail(f"ui --sessions listed {listed}")
    ended = json.loads(cli(["ui", "--logout-all", "--json"], args.lanbridge, args.state_dir).stdout)["ended"]
    after, _, _ = request(args.console, "GET", "/", {"Host": host, "Cookie": cookie})
    if ended != 1 or after != 401:
        fail(f"ui --logout-all ended {ended}, and the cookie then got {after}")
    ok("ui --sessions lists the session and ui --logout-all ends it")

    # The link reaches the browser through a 0600 file, never through argv (issue 36: `nobody`
    # read the token from xdg-open's command line in /proc and logged in first).
    with tempfile.TemporaryDirectory(prefix="console-open-") as tmp:
        fake = os.path.join(tmp, "bin")
        os.mkdir(fake)
        # A FIFO: the test reads what xdg-open was given when it runs (the CLI does not wait for it).
        seen = os.path.join(tmp, "argv")
        os.mkfifo(seen)
        reader = os.open(seen, os.O_RDONLY | os.O_NONBLOCK)
        with open(os.path.join(fake, "xdg-open"), "w") as f:
            f.write(f"#!/bin/sh\n{{ printf '%s\\n' \"$0\" \"$@\"; env; }} > {seen}\n")
        os.chmod(os.path.join(fake, "xdg-open"), 0o755)
        runtime = os.path.join(tmp, "run")
        os.mkdir(runtime, 0o700)
        env = {k: v for k, v in os.environ.items() if k not in ("SSH_CONNECTION", "SUDO_UID")}
        env.update(PATH=f"{fake}:{env.get('PATH', '/usr/bin:/bin')}", DISPLAY=":99", XDG_RUNTIME_DIR=runtime)
        run = subprocess.run([args.lanbridge, "ui", "--state-dir", args.state_dir], env=env, capture_output=True, text=True, timeout=60)
        if run.returncode != 0:
            fail(f"lanbridge ui exited {run.returncode}: {run.stderr}")
        opened = b""
        while True:
            readable, _, _ = select.select([reader], [], [], TIMEOUT)
            if not readable:
                fail("xdg-open was never run")
            chunk = os.read(reader, 65536)
            if not chunk and opened:
                break
            opened += chunk
        os.close(reader)
        opened = opened.decode()
        page = os.path.join(runtime, "lanbridge", "console.html")
        if "token=" in opened or page not in opened:
            fail(f"xdg-open was given {opened!r}")
        mode = os.stat(page).st_mode & 0o777
        link = open(page).read().split('url=', 1)[1].split('"', 1)[0].replace("&amp;", "&")
        if mode != 0o600 or "/login?token=" not in link:
            fail(f"the page is {oct(mode)} and links to {link!r}")
        status, _, _ = request(args.console, "GET", link[len(args.console):], {"Host": host})
        if status != 303:
            fail(f"the link in the page got {status}")
    ok("ui opens a 0600 page that forwards to the link; no token in xdg-open's argv or environment")


def other_user(args):
    """Another local user (`nobody`, through setpriv) cannot use the operator's link or session."""
    host = urllib.parse.urlsplit(args.console).netloc
    link = login_link(args.lanbridge, args.state_dir)[len(args.console):]

    def as_nobody(path, cookie=None):
        script = ("import http.client,sys\n"
                  f"c=http.client.HTTPConnection('{urllib.parse.urlsplit(args.console).hostname}',{urllib.parse.urlsplit(args.console).port},timeout=10)\n"
                  f"c.request('GET',sys.argv[1],headers={{'Host':'{host}'{', ' + repr('Cookie') + ':' + repr(cookie) if cookie else ''}}})\n"
                  "print(c.getresponse().status)\n")
        run = subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "/usr/bin/python3", "-c", script, path],
                             capture_output=True, text=True, timeout=30, cwd="/")
        if run.returncode != 0:
            fail(f"the request as nobody failed: {run.stderr}")
        return int(run.stdout.strip())

    if (status := as_nobody(link)) != 403:
        fail(f"nobody redeeming the operator's link got {status}")
    cookie = log_in(args.console, link, host, "after nobody tried it, the operator's own link")
    ok("nobody's try with the operator's login link gets 403, and the link still works for the operator")

    for path in ["/", "/nodes", "/events"]:
        if (status := as_nobody(path, cookie)) != 403:
            fail(f"nobody replaying the operator's cookie on {path} got {status}")
    status, _, _ = request(args.console, "GET", "/nodes", {"Host": host, "Cookie": cookie})
    if status != 200:
        fail(f"the operator's own session got {status} after nobody's replays")
    ok("nobody replaying the operator's session cookie gets 403 on pages and events")


def openclaw_app(args):
    """Issue 38: one of OpenClaw's apps (the app simulator) waits at the door; the console shows
    it has no code, never shows the fingerprint, refuses a wrong one and approves the right one."""
    host = urllib.parse.urlsplit(args.console).netloc
    keys = tempfile.mkdtemp(prefix="console-app-")
    app = subprocess.Popen([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "openclaw_app.py"), args.door,
                            "--state", os.path.join(keys, "k"), "--retry", "0.5"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.PIPE, text=True)
    lines = queue.Queue()
    threading.Thread(target=lambda: [lines.put(l.rstrip("\n")) for l in app.stdout], daemon=True).start()

    def wait(prefix):
        while True:
            line = lines.get(timeout=TIMEOUT)
            if line.startswith(prefix):
                return line
    try:
        shown = wait("tls ").split()[1]
        request_id = wait("pairing-required ").split()[1]
        cookie = log_in(args.console, login_link(args.lanbridge, args.state_dir)[len(args.console):], host, "the login link")
        status, _, page = request(args.console, "GET", "/", {"Host": host, "Cookie": cookie})
        if status != 200 or "One of OpenClaw's apps" not in page or request_id not in page:
            fail(f"the pending page does not show the app's request: {status}")
        if shown in page or shown[:6] in page:
            fail("the page shows the fingerprint: the operator would copy it instead of comparing it")
        ok("an app's request is shown as having no code, and its fingerprint is not on the page")
        csrf = page.split('name="csrf" value="', 1)[1].split('"', 1)[0]
        form = {"Host": host, "Cookie": cookie, "Origin": args.console, "Content-Type": "application/x-www-form-urlencoded"}
        wrong = "000000" if not shown.startswith("000000") else "111111"
        request(args.console, "POST", "/pending/approve", form, body=f"csrf={csrf}&request={request_id}&fingerprint={wrong}")
        if request_id not in cli(["nodes", "pending"], args.lanbridge, args.state_dir).stdout:
            fail("a wrong fingerprint approved the app")
        ok("a wrong fingerprint approves nothing")
        status, _, _ = request(args.console, "POST", "/pending/approve", form, body=f"csrf={csrf}&request={request_id}&fingerprint={shown[:6]}")
        if status != 303:
            fail(f"the right fingerprint got {status}")
        wait("hello ")
        ok("the right fingerprint approves it, and the app is let in")
    finally:
        app.kill()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("part", choices=["browser", "attacks", "other-user", "openclaw-app"])
    parser.add_argument("--door", help="the door for OpenClaw's apps (openclaw-app part)")
    parser.add_argument("--lanbridge", required=True)
    parser.add_argument("--node-sim")
    parser.add_argument("--state-dir", required=True)
    parser.add_argument("--bridge-port", type=int)
    parser.add_argument("--console", required=True)
    parser.add_argument("--shots")
    args = parser.parse_args()
    {"browser": browser, "attacks": attacks, "other-user": other_user, "openclaw-app": openclaw_app}[args.part](args)
    print("done", flush=True)


if __name__ == "__main__":
    main()
