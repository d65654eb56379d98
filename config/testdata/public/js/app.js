console.log("sluice");
