// The chat box: sends the message to the OpenAI-compatible endpoint (the login cookie
// authenticates it) and shows the reply as its server-sent chunks arrive. When a tool
// asks first, the stream carries the question: the exact diff or command, with Approve
// and Deny buttons that answer it; no answer in time is a no.
(function () {
  "use strict";
  const form = document.getElementById("chat-form");
  const input = document.getElementById("chat-input");
  const log = document.getElementById("chat-log");
  const project = document.getElementById("chat-project");
  if (!form) return;
  const questions = new Map();
  // Every change the page asks for carries its log-in's CSRF token.
  const csrf = document.querySelector('meta[name="csrf-token"]').content;

  function settle(id, text, outcome) {
    const box = questions.get(id);
    if (!box) return;
    questions.delete(id);
    clearTimeout(box.timer);
    box.element.querySelectorAll("button").forEach(function (b) { b.remove(); });
    box.element.classList.add(outcome);
    box.status.textContent = text;
  }

  async function decide(id, decision) {
    const box = questions.get(id);
    if (!box) return;
    box.element.querySelectorAll("button").forEach(function (b) { b.disabled = true; });
    const response = await fetch("/ui/approvals/" + encodeURIComponent(id), {
      method: "POST",
      credentials: "same-origin",
      headers: {"Content-Type": "application/x-www-form-urlencoded", "X-CSRF-Token": csrf},
      body: "decision=" + decision,
    }).catch(function () { return null; });
    const body = response ? await response.json().catch(() => ({})) : {};
    if (!response || !response.ok) {
      settle(id, (body.error && body.error.message) || "the answer did not arrive", "expired");
    } else {
      settle(id, SETTLED[body.outcome] + " by " + body.by, body.outcome);
    }
  }

  function ask(question, reply) {
    const element = document.createElement("div");
    element.className = "approval";
    element.setAttribute("role", "group");
    element.setAttribute("aria-label", "Approval");
    const title = document.createElement("p");
    title.className = "question";
    title.textContent = question.tool + " wants to " + question.summary;
    element.appendChild(title);
    if (question.detail) {
      const detail = document.createElement("pre");
      detail.className = "diff";
      question.detail.replace(/\n+$/, "").split("\n").forEach(function (text) {
        const row = document.createElement("span");
        if (text.startsWith("+") && !text.startsWith("+++")) row.className = "add";
        else if (text.startsWith("-") && !text.startsWith("---")) row.className = "del";
        row.textContent = text + "\n";
        detail.appendChild(row);
      });
      element.appendChild(detail);
    }
    const status = document.createElement("p");
    status.className = "status";
    status.textContent = "Waiting for your answer (" + Math.round(question.seconds) + " s).";
    element.appendChild(status);
    [["Approve", "approve"], ["Deny", "deny"]].forEach(function (pair) {
      const button = document.createElement("button");
      button.type = "button";
      button.textContent = pair[0];
      if (pair[1] === "deny") button.className = "deny";
      button.addEventListener("click", function () { decide(question.id, pair[1]); });
      element.appendChild(button);
    });
    log.insertBefore(element, reply || null);
    log.scrollTop = log.scrollHeight;
    const timer = setTimeout(function () {
      settle(question.id, "No answer in time: refused.", "expired");
    }, question.seconds * 1000);
    questions.set(question.id, {element: element, status: status, timer: timer});
  }

  const SETTLED = {
    approved: "Approved",
    declined: "Denied",
    expired: "No answer in time: refused.",
  };

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
        headers: {
          "Content-Type": "application/json",
          "X-CSRF-Token": csrf,
          "X-Lore-Session": encodeURIComponent(form.dataset.scope),
          "X-Lore-Approvals": "stream",
        },
        body: JSON.stringify({
          model: "lore",
          stream: true,
          messages: [{role: "user", content: text}],
          project: project ? project.value : null,
        }),
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
          if (chunk.object === "lore.approval") { ask(chunk, reply); continue; }
          if (chunk.object === "lore.approval.settled") {
            const by = chunk.by ? " by " + chunk.by : "";
            settle(chunk.id, SETTLED[chunk.outcome] + (chunk.outcome === "expired" ? "" : by), chunk.outcome);
            continue;
          }
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
      questions.forEach(function (box, id) { settle(id, SETTLED.expired, "expired"); });
      // The turn may have noted or forgotten something: show the block as it is now.
      if (window.htmx) {
        htmx.ajax("GET", "/ui/memories?scope=" + encodeURIComponent(form.dataset.scope), "#memories");
        htmx.ajax("GET", "/ui/sessions?scope=" + encodeURIComponent(form.dataset.scope), "#sessions");
      }
    }
  }

  // Opened again while a tool waits (a reload, another tab): its question is shown too.
  fetch("/ui/approvals?scope=" + encodeURIComponent(form.dataset.scope), {credentials: "same-origin"})
    .then(function (response) { return response.ok ? response.json() : {approvals: []}; })
    .then(function (body) { body.approvals.forEach(function (q) { ask(q, null); }); })
    .catch(function () {});

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
