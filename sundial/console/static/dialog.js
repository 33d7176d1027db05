// A modal confirmation: a <dialog> named by its question and described by what follows from it.
import { h } from "./dom.js";

let count = 0;

// Resolves true when the reader confirms, false when they go back (the button or Escape).
export function confirmAction({ question, detail, yes, no = "Go back" }) {
  const id = `confirm-${++count}`;
  return new Promise((resolve) => {
    const dialog = h("dialog", { "aria-labelledby": `${id}-q`, "aria-describedby": `${id}-d` },
      h("h2", { id: `${id}-q` }, question),
      h("p", { id: `${id}-d` }, detail),
      h("div", { class: "toolbar" },
        h("button", { type: "button", class: "danger", onclick: () => close(true) }, yes),
        h("button", { type: "button", onclick: () => close(false) }, no)));
    let answered = false;
    function close(answer) {
      if (answered) return;
      answered = true;
      dialog.close();
      dialog.remove();
      resolve(answer);
    }
    dialog.addEventListener("cancel", () => close(false));
    document.body.append(dialog);
    dialog.showModal();
    dialog.querySelector("button:not(.danger)").focus();  // Enter on a reflex does no harm
  });
}
