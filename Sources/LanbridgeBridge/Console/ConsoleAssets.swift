/// The console's stylesheet and its one script, embedded so the binary (and the .deb) needs no
/// files beside it. The script only keeps the page's live section current; every page works
/// without it.
enum ConsoleAssets {
    static let css = """
        :root { color-scheme: light dark; --fg: #1b1f24; --bg: #fff; --muted: #5b636e; --line: #d6dbe1; --accent: #0b5cad; --warn: #9a3b00; --bad: #b00020; --card: #f6f8fa; }
        @media (prefers-color-scheme: dark) { :root { --fg: #e6e9ed; --bg: #111418; --muted: #9aa4b0; --line: #2c333b; --accent: #6cb0ff; --warn: #ffb36b; --bad: #ff6b81; --card: #191e24; } }
        * { box-sizing: border-box; }
        body { margin: 0; font: 16px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); background: var(--bg); }
        header { display: flex; flex-wrap: wrap; gap: .5rem 1rem; align-items: center; padding: .6rem 1rem; border-bottom: 1px solid var(--line); }
        header .brand { font-weight: 700; }
        nav { display: flex; flex-wrap: wrap; gap: .25rem .9rem; flex: 1; }
        nav a { color: var(--accent); text-decoration: none; padding: .2rem 0; }
        nav a[aria-current="page"] { color: var(--fg); font-weight: 600; border-bottom: 2px solid var(--accent); }
        main { max-width: 60rem; margin: 0 auto; padding: 1rem; }
        h1 { font-size: 1.35rem; margin: .2rem 0 1rem; }
        h2 { font-size: 1.1rem; margin: 0 0 .3rem; overflow-wrap: anywhere; }
        article, .card { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: .8rem 1rem; margin: 0 0 1rem; }
        .meta { color: var(--muted); font-size: .92rem; margin: .1rem 0 .6rem; overflow-wrap: anywhere; }
        .warn { color: var(--warn); font-weight: 600; }
        .bad { color: var(--bad); font-weight: 600; }
        .ok { color: #1a7f37; font-weight: 600; }
        .flash { border-left: 4px solid var(--accent); padding: .5rem .8rem; background: var(--card); margin-bottom: 1rem; }
        .flash.error { border-color: var(--bad); }
        form.inline { display: inline-flex; flex-wrap: wrap; gap: .4rem; align-items: center; margin: .2rem .4rem .2rem 0; }
        form.block { display: grid; gap: .5rem; margin: .6rem 0; max-width: 28rem; }
        label { display: inline-flex; gap: .4rem; align-items: center; flex-wrap: wrap; }
        label.check { flex-wrap: nowrap; align-items: baseline; }
        .withheld { margin: .25rem 0; }
        fieldset.sensitive { border: 1px solid var(--line); border-radius: 6px; margin: .3rem 0; padding: .2rem .6rem; display: flex; flex-wrap: wrap; gap: .2rem 1rem; }
        article.ask { border-left: 4px solid var(--warn); }
        code.params { overflow-wrap: anywhere; }
        input[type=text], input[type=number], select { font: inherit; padding: .35rem .5rem; border: 1px solid var(--line); border-radius: 6px; background: var(--bg); color: var(--fg); min-width: 0; }
        input.code { width: 7.5em; letter-spacing: .2em; font-family: ui-monospace, monospace; font-size: 1.15rem; }
        button { font: inherit; padding: .35rem .8rem; border-radius: 6px; border: 1px solid var(--line); background: var(--bg); color: var(--fg); cursor: pointer; }
        button.primary { background: var(--accent); border-color: var(--accent); color: #fff; }
        button.danger { color: var(--bad); border-color: var(--bad); }
        code, .mono { font-family: ui-monospace, monospace; font-size: .9em; overflow-wrap: anywhere; }
        table { border-collapse: collapse; width: 100%; font-size: .92rem; }
        th, td { text-align: left; padding: .35rem .5rem; border-bottom: 1px solid var(--line); vertical-align: top; overflow-wrap: break-word; }
        dl { display: grid; grid-template-columns: max-content 1fr; gap: .25rem 1rem; margin: 0; }
        dt { color: var(--muted); }
        dd { margin: 0; overflow-wrap: anywhere; }
        .qr svg { max-width: 100%; height: auto; background: #fff; padding: 4px; }
        .none { color: var(--muted); }
        .tag { display: inline-block; font-size: .8rem; padding: 0 .4rem; border-radius: 4px; border: 1px solid var(--line); color: var(--muted); margin-left: .3rem; }
        @media (max-width: 40rem) {
          main { padding: .6rem; } dl { grid-template-columns: 1fr; } dt { margin-top: .4rem; } th.wide, td.wide { display: none; }
          header { padding: .4rem .6rem; gap: .3rem .6rem; } header .meta { display: none; } header form.inline { margin: 0 0 0 auto; }
          nav { order: 3; flex-basis: 100%; flex-wrap: nowrap; overflow-x: auto; gap: 1rem; }
        }
        """

    /// Listens on /events for the topics the live section names (`data-events`) and merges the section's fresh fragment: entries are keyed
    /// (`data-key`) and versioned (`data-fp`); one the operator is typing into is left alone.
    static let js = """
        "use strict";
        (function () {
          const live = document.getElementById("live");
          if (!live || !window.EventSource) return;
          let busy = false, again = false;
          function inUse(el) {
            if (el.contains(document.activeElement)) return true;
            return Array.from(el.querySelectorAll("input[type=text],input[type=number]")).some(i => i.value !== "");
          }
          function merge(html) {
            const t = document.createElement("template");
            t.innerHTML = html;
            const fresh = t.content.getElementById("live");
            if (!fresh) return;
            const old = new Map(Array.from(live.children).filter(c => c.dataset.key).map(c => [c.dataset.key, c]));
            const keep = new Set();
            let at = live.firstElementChild;
            for (const node of Array.from(fresh.children)) {
              const key = node.dataset.key;
              let el = old.get(key);
              keep.add(key);
              // The cursor follows a replaced entry: inserting before a detached one would throw
              // and leave every later entry stale.
              if (el && el.dataset.fp !== node.dataset.fp && !inUse(el)) { if (at === el) at = node; el.replaceWith(node); el = node; }
              if (!el) { el = node; }
              if (el !== at) { live.insertBefore(el, at); } else { at = at.nextElementSibling; }
            }
            for (const [key, el] of old) if (!keep.has(key)) el.remove();
          }
          async function refresh() {
            if (busy) { again = true; return; }
            busy = true;
            try {
              const r = await fetch(live.dataset.fragment, { credentials: "same-origin", cache: "no-store" });
              if (r.ok) merge(await r.text());
            } catch (e) { /* the next event retries */ }
            busy = false;
            if (again) { again = false; refresh(); }
          }
          const events = new EventSource("/events");
          for (const topic of (live.dataset.events || "change").split(" ")) events.addEventListener(topic, refresh);
          events.addEventListener("open", refresh);
        })();
        """
}
