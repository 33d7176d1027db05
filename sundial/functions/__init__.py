"""The three Lambda entry points (api, scheduler, worker): thin handlers over sundial/shared/."""
