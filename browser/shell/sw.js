// The shell's Service Worker: it shows the agent's notifications (system.notify; Android Chrome
// allows them only from a worker) and brings the page back when one is tapped.
self.addEventListener("notificationclick", (event) => {
  event.notification.close();
  event.waitUntil(self.clients.matchAll({ type: "window" }).then((windows) => (windows[0] ? windows[0].focus() : self.clients.openWindow("/"))));
});
