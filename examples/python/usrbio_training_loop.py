"""Feed a training step from a dataset file on an fgds mount through usrbio
rings: batches of fixed-size records land in GPU memory (or host memory
without a GPU) while the previous batch trains.

    python3 usrbio_training_loop.py /mnt/fgds/train.bin [steps]

The file holds float32 records of RECORD floats each (make one with
`--make`). Two batch buffers take turns: while the step trains on one,
the ring fills the other, so storage and compute overlap.
"""

import os
import sys

import torch

import fgds

RECORD = 1024                 # floats per record
BATCH = 256                   # records per batch
BATCH_BYTES = RECORD * BATCH * 4


def make_dataset(path, batches=8):
    data = torch.randn(batches * BATCH, RECORD)
    with open(path, "wb") as f:
        f.write(data.numpy().tobytes())


class BatchReader:
    """Reads batch i of the file into one of two buffers, asynchronously."""

    def __init__(self, session, path, device):
        self.device = device
        self.buffers = [torch.empty(BATCH, RECORD, device=device)
                        for _ in range(2)]
        if device.type == "cuda":
            # The tensors themselves are the iovs: reads land in them.
            self.iovs = [session.wrap_gpu(b) for b in self.buffers]
        else:
            # Host iovs are memory shared with the daemon; the batch tensor
            # is a view of it, no copy.
            self.iovs = [session.create_iov(BATCH_BYTES) for _ in range(2)]
            self.buffers = [torch.frombuffer(iov.buffer, dtype=torch.float32,
                                             count=BATCH * RECORD)
                            .view(BATCH, RECORD) for iov in self.iovs]
        self.ior = session.create_ior(entries=8)
        self.file = session.open(path)
        self.batches = os.path.getsize(path) // BATCH_BYTES

    def start(self, step):
        slot = step % 2
        self.ior.prep_read(self.iovs[slot], 0, self.file,
                           (step % self.batches) * BATCH_BYTES, BATCH_BYTES,
                           userdata=step)
        self.ior.submit()

    def finish(self, step):
        (completion,) = self.ior.wait(min=1, max=1)
        assert completion.userdata == step
        if completion.check() != BATCH_BYTES:
            raise EOFError("short batch")
        return self.buffers[step % 2]

    def close(self):
        self.file.close()
        self.ior.close()
        for iov in self.iovs:
            iov.close()


def main():
    path = sys.argv[1]
    if "--make" in sys.argv:
        make_dataset(path)
        return
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 16
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = torch.nn.Linear(RECORD, 1).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    with fgds.Session(path) as session:
        reader = BatchReader(session, path, device)
        reader.start(0)
        for step in range(steps):
            batch = reader.finish(step)
            if step + 1 < steps:
                # The other buffer is free: its batch trained last step.
                reader.start(step + 1)
            loss = model(batch).pow(2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if device.type == "cuda":
                # The buffer is read into again two steps later: the step's
                # kernels must be done with it by then.
                torch.cuda.current_stream().synchronize()
        reader.close()
    print(f"{steps} steps on {device}, last loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
