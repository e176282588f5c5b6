#![no_main]
//! storlab's reader of iometer-icf input: it returns an error on a bad input, never panics or hangs.
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = storlab_cli::fuzzing::FuzzTarget::IometerIcf.run(data);
});
