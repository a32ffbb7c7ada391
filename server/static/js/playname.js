// The name panel on the player's page: asked once before the first join
// (the name is then kept in local storage), and opened again by "Change name"
// in the lobby, where a new name means leaving the room and joining again:
// the protocol takes a player's name in the hello only.

import { showMessage } from "./dom.js";
import { nameProblem, saveName } from "./seats.js";

const $ = (id) => document.getElementById(id);

export class NamePanel {
  /** onName(name, changing) runs with a good name; changing is false for the first one. */
  constructor(onName) {
    this.onName = onName;
    this.changing = false;
    $("name-form").addEventListener("submit", (event) => {
      event.preventDefault();
      this.submit();
    });
    $("name-cancel").addEventListener("click", () => this.close());
  }

  get open() {
    return !$("name-panel").hidden;
  }

  /** Ask for the first name; `problem` says why the last one would not do. */
  ask(problem = "") {
    this.changing = false;
    this.show("Your name", "Join", "Asked once: this browser remembers it.", "");
    showMessage($("name-error"), problem, "error");
  }

  /** Offer a new name in place of `current`; `note` says what changing costs. */
  change(current, note) {
    this.changing = true;
    this.show("Change your name", "Save name", note, current);
    showMessage($("name-error"), "");
    $("name-input").select();
  }

  show(heading, submit, help, value) {
    $("name-heading").textContent = heading;
    $("name-submit").textContent = submit;
    $("name-help").textContent = help;
    $("name-cancel").hidden = !this.changing;
    $("name-input").value = value;
    $("name-input").removeAttribute("aria-invalid");
    $("name-panel").hidden = false;
    $("name-input").focus();
  }

  close() {
    $("name-panel").hidden = true;
    if (this.changing) $("change-name").focus();
    this.changing = false;
  }

  submit() {
    const name = $("name-input").value.trim();
    const problem = nameProblem(name);
    if (problem) {
      showMessage($("name-error"), problem, "error");
      $("name-input").setAttribute("aria-invalid", "true");
      $("name-input").focus();
      return;
    }
    const changing = this.changing;
    saveName(name);
    $("name-panel").hidden = true;
    this.changing = false;
    this.onName(name, changing);
  }
}
