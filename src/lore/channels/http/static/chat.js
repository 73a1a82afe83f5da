// The chat box: sends the message to the OpenAI-compatible endpoint (the login cookie
// authenticates it) and shows the reply as its server-sent chunks arrive.
(function () {
  "use strict";
  const form = document.getElementById("chat-form");
  const input = document.getElementById("chat-input");
  const log = document.getElementById("chat-log");
  if (!form) return;

  function line(role, text) {
    const item = document.createElement("div");
    item.className = "msg " + role;
    item.textContent = text;
    log.appendChild(item);
    log.scrollTop = log.scrollHeight;
    return item;
  }

  async function send(text) {
    line("user", text);
    const reply = line("assistant streaming", "");
    const button = form.querySelector("button");
    button.disabled = true;
    try {
      const response = await fetch("/v1/chat/completions", {
        method: "POST",
        credentials: "same-origin",
        headers: {"Content-Type": "application/json", "X-Lore-Session": form.dataset.scope},
        body: JSON.stringify({model: "lore", stream: true, messages: [{role: "user", content: text}]}),
      });
      if (!response.ok) {
        const body = await response.json().catch(() => ({}));
        throw new Error((body.error && body.error.message) || response.statusText);
      }
      const reader = response.body.getReader();
      const decoder = new TextDecoder();
      let buffer = "";
      for (;;) {
        const {value, done} = await reader.read();
        if (done) break;
        buffer += decoder.decode(value, {stream: true});
        let cut;
        while ((cut = buffer.indexOf("\n\n")) >= 0) {
          const event = buffer.slice(0, cut).trim();
          buffer = buffer.slice(cut + 2);
          if (!event.startsWith("data: ") || event === "data: [DONE]") continue;
          const chunk = JSON.parse(event.slice(6));
          if (chunk.error) throw new Error(chunk.error.message);
          const delta = chunk.choices[0].delta.content;
          if (delta) reply.textContent += delta;
        }
      }
    } catch (error) {
      reply.classList.add("error");
      reply.textContent = reply.textContent || String(error.message || error);
    } finally {
      reply.classList.remove("streaming");
      button.disabled = false;
      // The turn may have noted or forgotten something: show the block as it is now.
      if (window.htmx) {
        htmx.ajax("GET", "/ui/memories?scope=" + encodeURIComponent(form.dataset.scope), "#memories");
        htmx.ajax("GET", "/ui/sessions?scope=" + encodeURIComponent(form.dataset.scope), "#sessions");
      }
    }
  }

  form.addEventListener("submit", function (event) {
    event.preventDefault();
    const text = input.value.trim();
    if (!text) return;
    input.value = "";
    send(text);
  });
  input.addEventListener("keydown", function (event) {
    if (event.key === "Enter" && !event.shiftKey) {
      event.preventDefault();
      form.requestSubmit();
    }
  });
})();
