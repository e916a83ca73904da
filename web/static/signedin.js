// toolgate web: after the sign-in, the page's token goes to this origin's
// storage (scheme, host and port: another server on 127.0.0.1 cannot read
// it, although it gets the session's cookie), and the page opens.
"use strict";
localStorage.setItem("toolgate-csrf", document.querySelector('meta[name="toolgate-csrf"]').content);
location.replace("/");
