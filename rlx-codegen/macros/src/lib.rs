//! Proc-macro front end (see issue 4).
