// Tiny DOM helpers. Text always goes in through textContent, never innerHTML,
// because player and room names come from strangers.

/** Create an element: el("div", {class: "x", "aria-label": "y"}, [children or text]). */
export function el(tag, attrs = {}, children = []) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key === "style" && typeof value === "object") {
      // Through CSSOM: the Content-Security-Policy forbids inline style attributes.
      for (const [name, v] of Object.entries(value)) node.style.setProperty(name, String(v));
    }
    else if (key.startsWith("on") && typeof value === "function") {
      node.addEventListener(key.slice(2), value);
    } else node.setAttribute(key, value === true ? "" : String(value));
  }
  const list = Array.isArray(children) ? children : [children];
  for (const child of list) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/** Replace all children of node. */
export function setChildren(node, children) {
  node.replaceChildren(...children.filter((c) => c !== null && c !== undefined));
}

/** Race time as m:ss.t (or h:mm:ss.t for long races). */
export function formatMs(ms) {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return "–";
  const sign = ms < 0 ? "-" : "";
  const total = Math.floor(Math.abs(ms) / 100);
  const tenths = total % 10;
  const seconds = Math.floor(total / 10) % 60;
  const minutes = Math.floor(total / 600) % 60;
  const hours = Math.floor(total / 36000);
  const ss = String(seconds).padStart(2, "0");
  if (hours > 0) return `${sign}${hours}:${String(minutes).padStart(2, "0")}:${ss}.${tenths}`;
  return `${sign}${minutes}:${ss}.${tenths}`;
}

/** Show a message in a status box (role=status or role=alert set in the HTML). */
export function showMessage(node, text, kind = "info") {
  node.textContent = text;
  node.dataset.kind = kind;
  node.hidden = !text;
}
