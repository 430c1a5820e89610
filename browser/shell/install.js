// The install page's one job for scripts: point its last link at this host over HTTPS.
const link = document.getElementById("shell");
link.href = `https://${location.host}/`;
link.textContent = link.href;
