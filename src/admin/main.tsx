import { render } from "preact";
import "./styles.css";
import "./styles/media.css";
import "./styles/pickers.css";
import "./styles/narrow.css";
import "./styles/editing.css";
import "./styles/chat.css";
import "./styles/account.css";
import { App } from "./app";

render(<App />, document.getElementById("app")!);
